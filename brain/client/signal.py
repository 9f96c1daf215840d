"""A cancellation signal that callers hand to a blocking SDK call.

Python has no AbortSignal; this is the smallest equivalent. The owner of some work (for example
a host Tool whose own call was cancelled) fires it, and a `send(..., signal=sig)` waiting in
another thread reacts by cancelling the turn on the server. Firing is one-way and idempotent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class CancelSignal:
    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str | None = None) -> None:
        """Fire the signal; later calls do nothing. Callbacks run in the calling thread."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    set = cancel

    def wait(self, timeout: float | None = None) -> bool:
        """True once fired; False when `timeout` passed first."""
        return self._event.wait(timeout)

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run `callback` when fired (at once if already fired); returns a remover."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)


Signal = CancelSignal
