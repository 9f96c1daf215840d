"""A reading of processes taken every few milliseconds through a timed phase, in a thread.

The fleet's PSS (tools/bench/fleet_measure.py) and the CPU split by role
(tools/bench/cpu_split.py) both read `/proc` over the same phase the same way: once as it
begins, then every `period` seconds from a daemon thread, once more as it ends. This is that
shape; each keeps only what it reads (`sample`) and what it notes once the first reading is in
(`began`).
"""

from __future__ import annotations

import threading
import time
from typing import Self


class PeriodicSampler:
    """Calls `sample()` at enter, every `period` seconds in a thread, and at exit."""

    def __init__(self, period: float) -> None:
        self.period = period
        self.cpu_secs = 0.0  # the sampling thread's own CPU, known after exit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> object:
        raise NotImplementedError

    def began(self) -> None:
        """Called once, after the first reading: note what the phase started with."""

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.sample()
        self.cpu_secs = time.thread_time()  # all of this thread's CPU went to sampling

    def __enter__(self) -> Self:
        self.sample()
        self.began()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.sample()
