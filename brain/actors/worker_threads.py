"""Threads kept for the next piece of work instead of one new thread per effect or activation.

Executors run every effect in a thread, and a session actor runs every activation in one, so
that a slow model, Tool or guest never blocks the actor. Starting a thread costs more than the
work of a scripted model call, and a tool turn started a dozen. A finished thread therefore
waits a while for the next piece of work; there is no bound on how many run at once (a slow
Tool must never hold up another effect), only on how long an idle one lingers.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

LINGER_SECS = 30.0


class WorkerThreads:
    """Run each submitted callable in a thread of its own, reusing idle threads."""

    def __init__(self, prefix: str, linger_secs: float = LINGER_SECS) -> None:
        self._prefix = prefix
        self._linger = linger_secs
        self._tasks: queue.SimpleQueue[tuple[Callable[[], None], str]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()
        self._started = 0

    def submit(self, work: Callable[[], None], name: str) -> None:
        """Run `work` now in an idle thread, or in a new one when none is idle. `name` becomes
        the thread's name while it runs (as a thread per effect was named)."""
        with self._lock:
            if self._idle:
                self._idle -= 1  # that thread is spoken for: it finds the task in the queue
                self._tasks.put((work, name))
                return
            self._started += 1
        threading.Thread(target=self._serve, args=(work, name), daemon=True, name=name).start()

    def _serve(self, work: Callable[[], None], name: str) -> None:
        me = threading.current_thread()
        while True:
            me.name = name
            work()  # the callable reports its own failures; nothing may end the thread early
            me.name = f"{self._prefix}-idle"
            with self._lock:
                self._idle += 1
            try:
                work, name = self._tasks.get(timeout=self._linger)
                continue
            except queue.Empty:
                pass
            with self._lock:
                try:  # a task handed over between the timeout and this lock is still ours
                    work, name = self._tasks.get_nowait()
                except queue.Empty:
                    self._idle -= 1
                    return

    @property
    def started(self) -> int:
        """Threads started so far (for tests: reuse means fewer than the work submitted)."""
        return self._started
