"""One wasmtime Engine per process, made safe for Brain's forking actor processes.

Why it is built this way (stack hazards, docs/architecture.md):
- Actors are forked processes. A compile after fork hangs forever if the parent compiled with
  parallel compilation (stack hazard 4), so this Engine compiles on the calling thread only.
- A FuncType reused across two Engines aborts the whole process (stack hazard 5), so every wasmtime
  type the host defines is built here, per Engine, and never shared.
- Epoch interruption stops a guest that never returns; one daemon thread per Engine advances
  the epoch every `TICK_SECS`, so a deadline is a number of ticks. The ticker sleeps while no
  activation runs: an idle actor process should not wake up a hundred times a second.
- A cancelled activation is stopped the same way, early: the engine counts the epoch itself, so
  it knows the epoch at which a store was armed to trap, and the ticker advances the epoch to it
  at once (`advance_to`). That costs about a microsecond a tick (≤ 0.2 s for the default 1800 s
  turn). Activations in the same process armed to trap earlier are stopped too; a session actor
  process runs one activation at a time, and each activation reports a cancellation only when
  it was the one cancelled (see `Activation.cancelled`).
- The Engine is created lazily and remembered per process id: a child forked from a process
  that already had one gets its own (the parent's ticker thread does not survive the fork).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import wasmtime

from brain.agentloop.guestcall import brain_call
from brain.agentloop.modules import ModuleCache

TICK_SECS = 0.01
# Far enough away to never fire, small enough that epoch + ticks cannot overflow a u64.
NO_DEADLINE_TICKS = 1 << 40
# The most ticks `advance_to` will burn through: an hour of ticks, about 0.4 s of work. A store
# armed further away (no turn deadline) is stopped at its next guest call instead.
MAX_ADVANCE_TICKS = int(3600 / TICK_SECS)


class ProcessEngine:
    """The Engine of this process, its host-function Linker and its compiled-module cache."""

    def __init__(self) -> None:
        config = wasmtime.Config()
        config.parallel_compilation = False  # stack hazard 4
        config.epoch_interruption = True
        self.engine = wasmtime.Engine(config)
        self.pid = os.getpid()
        # Built per Engine, never shared (stack hazard 5).
        call_type = wasmtime.FuncType(
            [wasmtime.ValType.i32(), wasmtime.ValType.i32()], [wasmtime.ValType.i64()]
        )
        self.linker = wasmtime.Linker(self.engine)
        self.linker.define_func("brain", "call", call_type, brain_call, access_caller=True)
        self.modules = ModuleCache(self.engine, self.linker)
        self._running = 0
        self._epoch = 0  # the Engine's epoch, counted here: wasmtime-py cannot read it
        self._advance_to = 0
        self._wake = threading.Condition()
        self._ticker = threading.Thread(target=self._tick, name="agentloop-epoch", daemon=True)
        self._ticker.start()

    @contextmanager
    def running(self) -> Iterator[None]:
        """Mark an activation as running, so the epoch advances while it does."""
        with self._wake:
            self._running += 1
            self._wake.notify()
        try:
            yield
        finally:
            with self._wake:
                self._running -= 1

    def _tick(self) -> None:
        while True:
            with self._wake:
                while self._running == 0 and self._advance_to <= self._epoch:
                    self._wake.wait()
                burst = self._advance_to > self._epoch
            if not burst:
                time.sleep(TICK_SECS)
            with self._wake:
                target = max(self._epoch + 1, self._advance_to)
                while self._epoch < target:
                    self.engine.increment_epoch()
                    self._epoch += 1

    def arm(self, store: wasmtime.Store, deadline: float | None) -> int:
        """Arm `store` to trap at `deadline`; returns the epoch at which it will trap."""
        ticks = self.deadline_ticks(deadline)
        with self._wake:  # no tick between reading the epoch and arming against it
            store.set_epoch_deadline(ticks)
            return self._epoch + ticks

    def advance_to(self, epoch: int) -> bool:
        """Have the ticker advance the epoch to `epoch` now, trapping the stores armed to it.

        False (and nothing done) when `epoch` is more than MAX_ADVANCE_TICKS away."""
        with self._wake:
            if epoch - self._epoch > MAX_ADVANCE_TICKS:
                return False
            if epoch > self._advance_to:
                self._advance_to = epoch
                self._wake.notify()
            return True

    def deadline_ticks(self, deadline: float | None) -> int:
        """Epoch ticks from now until `deadline` (a time.monotonic() value), rounded up.

        The ticker's phase is unknown, so one extra tick makes the guest stop at or after the
        deadline, never before it; the overall deadline is still checked in every guest call.
        """
        if deadline is None:
            return NO_DEADLINE_TICKS
        remaining = deadline - time.monotonic()
        return max(1, math.ceil(remaining / TICK_SECS) + 1)


_lock = threading.Lock()
_current: ProcessEngine | None = None
# Engines inherited from a parent process are kept, never dropped: tearing down wasmtime state
# created by another process is the riskier path, and there is at most one per fork.
_inherited: list[ProcessEngine] = []


def _reset_lock_in_child() -> None:
    # A fork taken while another thread held the lock would leave it locked forever.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_lock_in_child)


def current_engine() -> ProcessEngine:
    """This process's Engine, created on first use (and again in a forked child)."""
    global _current
    engine = _current
    if engine is not None and engine.pid == os.getpid():
        return engine
    with _lock:
        if _current is not None and _current.pid != os.getpid():
            _inherited.append(_current)
            _current = None
        if _current is None:
            _current = ProcessEngine()
        return _current
