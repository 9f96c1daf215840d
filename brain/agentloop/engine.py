"""One wasmtime Engine per process, made safe for Brain's forking actor processes.

Why it is built this way (stack hazards, docs/architecture.md):
- Actors are forked processes. A compile after fork hangs forever if the parent compiled with
  parallel compilation (stack hazard 4), so this Engine compiles on the calling thread only.
- A FuncType reused across two Engines aborts the whole process (stack hazard 5), so every wasmtime
  type the host defines is built here, per Engine, and never shared.
- Epoch interruption stops a guest that never returns. The epoch is a clock of `TICK_SECS`
  ticks, so a deadline is a number of ticks, but it is advanced lazily: one daemon thread per
  Engine sleeps until the earliest armed deadline is due (and at least once a second while any
  is armed) and then makes up every tick since in one burst. Ticking every 10 ms woke that
  thread twice for every activation of a busy actor process (once to start ticking, once to
  stop), each time taking the interpreter lock from the work at hand; now it wakes about once
  a second, and not at all while nothing is armed. Arming never wakes it unless the new
  deadline is due before it looks again. A guest still traps one or two ticks after its
  deadline, as when the epoch was ticked.
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
from wasmtime import component as wc

from brain.agentloop.components import HOST_INTERFACE
from brain.agentloop.guestcall import brain_call, host_call
from brain.agentloop.modules import ModuleCache

TICK_SECS = 0.01
# While a store is armed, the ticker makes up the epoch's ticks at least this often (a burst of
# ~100 increments) instead of waking for each.
CATCH_UP_SECS = 1.0
# Far enough away to never fire, small enough that epoch + ticks cannot overflow a u64.
NO_DEADLINE_TICKS = 1 << 40
# The most ticks `advance_to` will burn through: an hour of ticks, about 0.4 s of work. A store
# armed further away (no turn deadline) is stopped at its next guest call instead.
MAX_ADVANCE_TICKS = int(3600 / TICK_SECS)


def engine_config(parallel_compilation: bool = False) -> wasmtime.Config:
    """The configuration every Engine of Brain's has: compiled code is only shared (serialized)
    between Engines that agree on what changes code generation (epoch interruption)."""
    config = wasmtime.Config()
    config.parallel_compilation = parallel_compilation
    config.epoch_interruption = True
    return config


class ProcessEngine:
    """The Engine of this process, its host-function Linkers and its compiled-module cache."""

    def __init__(self) -> None:
        self.engine = wasmtime.Engine(engine_config(parallel_compilation=False))  # hazard 4
        self.pid = os.getpid()
        # Built per Engine, never shared (stack hazard 5).
        call_type = wasmtime.FuncType(
            [wasmtime.ValType.i32(), wasmtime.ValType.i32()], [wasmtime.ValType.i64()]
        )
        self.linker = wasmtime.Linker(self.engine)
        self.linker.define_func("brain", "call", call_type, brain_call, access_caller=True)
        self.component_linker = wc.Linker(self.engine)
        with self.component_linker.root() as root, root.add_instance(HOST_INTERFACE) as host:
            host.add_func("call", host_call)
        self.modules = ModuleCache(self.engine, self.linker)
        self._epoch = 0  # the Engine's epoch, counted here: wasmtime-py cannot read it
        self._clock_at = time.monotonic()  # the epoch has made up the clock's ticks until here
        self._armed: dict[int, int] = {}  # id(store) -> the epoch it traps at (with a deadline)
        self._advance_to = 0
        self._looks_at = math.inf  # when the waiting ticker looks again (-inf: it is not waiting)
        self.ticker_wakes = 0  # how often the ticker woke (tests and benchmarks read it)
        self._wake = threading.Condition()
        self._ticker = threading.Thread(target=self._tick, name="agentloop-epoch", daemon=True)
        self._ticker.start()

    @contextmanager
    def running(self, store: wasmtime.Store) -> Iterator[None]:
        """While `store`'s activation runs (arm it inside); afterwards its deadline needs no
        tick."""
        try:
            yield
        finally:
            with self._wake:
                self._armed.pop(id(store), None)

    def _tick(self) -> None:
        while True:
            with self._wake:
                target = self._next_target()
                while target is None:
                    now = time.monotonic()
                    look = self._due_at()
                    self._looks_at = look
                    self._wake.wait(None if look == math.inf else max(0.0, look - now))
                    self.ticker_wakes += 1
                    target = self._next_target()
                self._looks_at = -math.inf
                while self._epoch < target:
                    self.engine.increment_epoch()
                    self._epoch += 1

    def _clock_epoch(self, now: float) -> int:
        """The epoch the clock has reached: the ticks not made up yet added."""
        return self._epoch + int((now - self._clock_at) / TICK_SECS + 1e-9)

    def _due_at(self) -> float:
        """When the ticker must look next: when the clock reaches the earliest epoch a store
        is armed to trap at, but CATCH_UP_SECS after the last catch-up at the latest; never,
        when no store waits for a tick (one whose epoch has passed traps as soon as its guest
        runs again)."""
        waiting = [epoch for epoch in self._armed.values() if epoch > self._epoch]
        if not waiting:
            return math.inf
        first = self._clock_at + (min(waiting) - self._epoch) * TICK_SECS
        return min(first, self._clock_at + CATCH_UP_SECS)

    def _next_target(self) -> int | None:
        """The epoch to advance to now (making up the clock's ticks, or a cancellation's
        jump), or None when there is nothing to do yet."""
        now = time.monotonic()
        if self._advance_to > self._epoch:
            return self._advance_to  # the clock's ticks stay owed: only the epoch jumped
        if now < self._due_at():
            return None
        caught_up = self._clock_epoch(now)
        if caught_up <= self._epoch:
            return None  # due within this tick: looked at again when it has passed
        self._clock_at += (caught_up - self._epoch) * TICK_SECS
        return caught_up

    def arm(self, store: wasmtime.Store, deadline: float | None) -> int:
        """Arm `store` to trap at `deadline`; returns the epoch at which it will trap."""
        with self._wake:  # no tick between reading the epoch and arming against it
            now = time.monotonic()
            if not self._armed:  # nothing counts on the clock: it starts again from here
                self._clock_at = now
            if deadline is None:
                self._armed.pop(id(store), None)
                store.set_epoch_deadline(NO_DEADLINE_TICKS)
                return self._epoch + NO_DEADLINE_TICKS
            target = self._deadline_epoch(deadline, now)
            store.set_epoch_deadline(target - self._epoch)
            self._armed[id(store)] = target
            if self._due_at() < self._looks_at:
                self._wake.notify()
            return target

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

    def _deadline_epoch(self, deadline: float, now: float) -> int:
        """The epoch at which a store must trap to stop at `deadline` (a time.monotonic()
        value): the first tick of the clock after it, and one more, so that a guest that calls
        the host often is stopped by that call's own deadline check (with its clearer message)
        rather than by the trap; never before the next tick."""
        ticks = math.ceil((deadline - self._clock_at) / TICK_SECS - 1e-9) + 1
        return max(self._clock_epoch(now) + 1, self._epoch + ticks)


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
