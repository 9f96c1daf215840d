"""Where a web worker runs an admission's journal work: on gevent's hub, or in its thread pool.

An admission (brain/web/admission.py) opens a session's journal and commits `turn_started`:
about half a millisecond of Python and an fdatasync. Run inline, the fdatasync stops every
greenlet of the worker until the disk answers; in gevent's thread pool the fdatasyncs of many
requests overlap. The pool pays when a sync takes milliseconds (a disk that flushes its cache,
a network volume). It costs when syncs are fast: a hand-off is ~0.1 ms of CPU, and the pool's
thread runs the admission's Python while the hub wants the GIL for the next request, so the two
take turns in switch-interval slices. With fdatasync at ~0.1 ms, 5,000 submits at once got
their 202 twice as fast inline (p50 4.2 → 2.1 s; docs/decisions.md, "Admission and overload").

So each worker keeps how long its recent commits waited (a commit's wall time minus its
thread's CPU time) and takes the least of the last `SAMPLES` as the disk's own sync time: a
commit also waits for a CPU, and in the pool for the GIL, but never less than the disk takes.
Admissions go to the pool while that floor is above `POOL_ABOVE_SECS`, and come back inline
once it is below `INLINE_BELOW_SECS` (two thresholds, so a disk near the line does not flip the
choice at every admission). A median instead kept a burst of 3,000 submits in the pool on a
fast disk: there, waiting for the GIL and for a CPU made the typical commit wait 4–9 ms while
the fastest took 0.1. Work starts inline and stays there until `SAMPLES` commits were timed.
Outside gevent (tests, plain threads) it always runs inline.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from brain.web.background import gevent_active

T = TypeVar("T")

POOL_ABOVE_SECS = 0.001
"""A disk whose syncs take longer than this gets admissions run in gevent's thread pool."""
INLINE_BELOW_SECS = 0.0005
"""A disk whose syncs take less than this gets them run on the hub again."""
SAMPLES = 16
"""How many recent commits the disk's sync time is judged by (the least wait among them)."""


class DiskWaitPlacement:
    """One per web worker: runs blocking journal work inline or in gevent's thread pool."""

    def __init__(self) -> None:
        self._waits: deque[float] = deque(maxlen=SAMPLES)
        self.pooled = False

    @property
    def recent_waits(self) -> tuple[float, ...]:
        """The waits of the last commits timed, oldest first (seconds)."""
        return tuple(self._waits)

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)`, on the hub or in the pool, as the recent commits' waits say."""
        if not self.pooled or not gevent_active():
            return fn(*args)
        import gevent

        return gevent.get_hub().threadpool.apply(fn, args)

    @contextmanager
    def commit_timed(self) -> Iterator[None]:
        """Around a commit, in whichever thread runs it: note how long it waited."""
        wall, cpu = time.perf_counter(), time.thread_time()
        yield
        self.note_wait((time.perf_counter() - wall) - (time.thread_time() - cpu))

    def note_wait(self, secs: float) -> None:
        """Count one commit's wait and choose where the next admissions run."""
        self._waits.append(max(secs, 0.0))
        if len(self._waits) < SAMPLES:
            return
        sync_secs = min(self._waits)
        if self.pooled and sync_secs < INLINE_BELOW_SECS:
            self.pooled = False
        elif not self.pooled and sync_secs > POOL_ABOVE_SECS:
            self.pooled = True
