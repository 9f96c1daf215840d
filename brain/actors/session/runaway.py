"""A warning in the server log when an Agentloop has computed past BRAIN_COMPUTE_WARN_SECS.

A loop stuck in `while True: pass` holds its session until the turn deadline (half an hour by
default) and shows nothing: its turn looks like one waiting on a slow model. So each activation
has a watch: once the time since the activation began passes the bound, and the guest is then
computing (not inside a guest call, where it waits on the actor, a model or a Tool), the watch
logs one warning naming the session, the turn and the Agentloop. When the bound passes while
the guest waits, the watch looks again shortly after that call returns. At most one warning
per activation. One timer thread per process serves every watch (a heap of due times), so an
activation costs a heap entry, not a thread: a busy session actor runs hundreds a second.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger("brain.agentloop")

# After a guest call returns past the bound: how long the guest must then compute to be named.
LOOK_AGAIN_SECS = 1.0


class RunawayWatch:
    """Watches one activation; `waiting()` wraps each guest call, `stop()` its end."""

    def __init__(self, session_id: str, turn: int, agentloop: str, warn_after: float) -> None:
        self.session_id = session_id
        self.turn = turn
        self.agentloop = agentloop
        self.warn_after = warn_after
        self.started = time.monotonic()
        self.warned = False
        self._lock = threading.Lock()
        self._in_call = 0
        self._due = False  # the bound passed while the guest waited
        self._stopped = False
        if warn_after > 0:
            self._arm(warn_after)

    def _arm(self, secs: float) -> None:
        _timers().call_at(time.monotonic() + secs, self._look)

    def _look(self) -> None:
        with self._lock:
            if self._stopped or self.warned:
                return
            if self._in_call:
                self._due = True
                return
            self.warned = True
        log.warning("session %s: turn %d has run %.0f s with its Agentloop %r computing (not "
                    "waiting on a model, Tool or Brain); a loop that never returns holds the "
                    "session until the turn deadline. Cancel it with POST "
                    "/v1/sessions/%s/cancel", self.session_id, self.turn,
                    time.monotonic() - self.started, self.agentloop, self.session_id)

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Around a guest call: the guest waits, it does not compute."""
        with self._lock:
            self._in_call += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_call -= 1
                look_again = self._due and not self._in_call and not self._stopped
                self._due = False
                if look_again:
                    self._arm(LOOK_AGAIN_SECS)

    def stop(self) -> None:
        """The activation ended: no warning after this (its heap entry is dropped when due)."""
        with self._lock:
            self._stopped = True


class _Timers:
    """One daemon thread calling each due callback; sleeps until the earliest."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, weakref.WeakMethod]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self.pid = os.getpid()
        threading.Thread(target=self._run, name="runaway-watch", daemon=True).start()

    def call_at(self, when: float, callback: Callable[[], None]) -> None:
        """Call the bound method `callback` at `when` (time.monotonic()), unless its object is
        gone by then: a finished activation's watch is not kept alive for a minute."""
        entry = (when, next(self._order), weakref.WeakMethod(callback))  # type: ignore[arg-type]
        with self._wake:
            heapq.heappush(self._due, entry)
            if self._due[0] is entry:
                self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._wake.wait(self._due[0][0] - time.monotonic() if self._due else None)
                _, _, method = heapq.heappop(self._due)
            callback = method()
            if callback is None:
                continue
            try:
                callback()
            except Exception:  # a warning that failed must not stop the others
                log.exception("the runaway watch failed")


_timers_lock = threading.Lock()
_current: _Timers | None = None


def _reset_lock_in_child() -> None:
    # A fork taken while another thread held the lock would leave it locked forever.
    global _timers_lock
    _timers_lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_lock_in_child)


def _timers() -> _Timers:
    """This process's timer thread, started on first use (and again in a forked child, where
    the parent's thread does not run)."""
    global _current
    with _timers_lock:
        if _current is None or _current.pid != os.getpid():
            _current = _Timers()
        return _current
