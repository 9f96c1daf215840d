"""The hand-over of admitted turns to the registry, repeated until the registry confirms it.

A web worker that admitted a turn has already answered 202: the turn is durable and owed. If
the registry never heard of it, nothing would run it until the session's next command, and a
client that only polls status would wait forever. Thespian's `tell` cannot promise delivery
(it returns quietly when a transmit fails), so the worker asks instead: the registry answers
once it holds a batch, and a batch it did not confirm in time is sent again, merged with the
turns admitted meanwhile. A batch that did arrive but whose answer was lost arrives twice;
the registry makes a repeat harmless.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

BATCH = 256
FIRST_RETRY_SECS = 0.25
MAX_RETRY_SECS = 5.0


class HandOver:
    """One per web worker: session ids in, confirmed batches out, in admission order."""

    def __init__(self, send: Callable[[tuple[str, ...]], bool],
                 pause: Callable[[float], None] | None = None) -> None:
        """`send` hands a batch to the registry and returns True once it confirmed it;
        `pause` waits between attempts (by default `time.sleep` as it is when called, which
        gevent's patching makes a greenlet's sleep in a gevent worker)."""
        self._send = send
        self._pause = pause or (lambda secs: time.sleep(secs))
        self._queue: queue.SimpleQueue[str] = queue.SimpleQueue()

    def put(self, session_id: str) -> None:
        self._queue.put(session_id)

    def run_forever(self) -> None:
        owed: list[str] = []
        while True:
            self.run_once(owed)

    def run_once(self, owed: list[str]) -> None:
        """Hand over the oldest batch of `owed` (waiting for one when empty), retrying until
        the registry confirms it; then drop it from `owed`."""
        if not owed:
            owed.append(self._queue.get())
        retry_secs = FIRST_RETRY_SECS
        attempts = 1
        while True:
            self._drain_into(owed)
            taken = owed[:BATCH]
            batch = tuple(dict.fromkeys(taken))  # a session admitted twice: told once
            if self._sent(batch):
                break
            log.warning("admitted turns of %d session(s) not confirmed by the registry "
                        "(attempt %d); sending again in %.2f s", len(batch), attempts,
                        retry_secs)
            self._pause(retry_secs)
            retry_secs = min(retry_secs * 2, MAX_RETRY_SECS)
            attempts += 1
        del owed[:len(taken)]

    def _drain_into(self, owed: list[str]) -> None:
        while len(owed) < BATCH:
            try:
                owed.append(self._queue.get_nowait())
            except queue.Empty:
                return

    def _sent(self, batch: tuple[str, ...]) -> bool:
        try:
            return self._send(batch)
        except Exception:
            log.exception("handing admitted turns to the registry failed")
            return False
