"""The Engine's epoch clock: ticks are made up in bursts, not ticked one by one, yet a guest that
never calls the host still stops at its deadline, never before it.

A real spinning Wasm guest runs in a thread for the deadline tests; the laziness is read from
the engine's own counters (`ticker_wakes`, the epoch it counts), which is what the change is
for: a busy actor process no longer wakes its ticker twice per activation.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import wasmtime

from brain.agentloop import AgentloopError, AgentloopRuntime
from brain.agentloop.engine import CATCH_UP_SECS, TICK_SECS, ProcessEngine
from tests.agentloop.helpers import FakeBrain, compile_guest


@pytest.fixture
def engine() -> ProcessEngine:
    return ProcessEngine()  # its own ticker: nothing else in the test process moves its epoch


def test_an_armed_store_costs_no_tick_until_its_deadline_is_near(engine: ProcessEngine) -> None:
    store = wasmtime.Store(engine.engine)
    with engine.running(store):
        trap_epoch = engine.arm(store, time.monotonic() + 30.0)
        time.sleep(0.4)  # forty ticks of the clock
        assert engine._epoch == 0  # none made up yet: nothing is due
        assert engine.ticker_wakes <= 1  # at most the wake that told it of the deadline
        assert trap_epoch >= 30.0 / TICK_SECS  # still the deadline's tick count away


def test_the_epoch_catches_up_with_the_clock_once_a_second(engine: ProcessEngine) -> None:
    store = wasmtime.Store(engine.engine)
    with engine.running(store):
        armed_at = time.monotonic()
        engine.arm(store, armed_at + 30.0)
        time.sleep(CATCH_UP_SECS + 0.4)
        elapsed_ticks = (time.monotonic() - armed_at) / TICK_SECS
        # One burst made up about a second of ticks; a ticker per tick would have woken ~140 times.
        assert CATCH_UP_SECS / TICK_SECS <= engine._epoch <= elapsed_ticks + 1
        assert engine.ticker_wakes <= 3


def test_rearming_repeatedly_does_not_wake_the_ticker(engine: ProcessEngine) -> None:
    store = wasmtime.Store(engine.engine)
    deadline = time.monotonic() + 30.0
    with engine.running(store):
        engine.arm(store, deadline)
        time.sleep(0.05)
        woken = engine.ticker_wakes
        for _ in range(200):  # as after every guest call
            engine.arm(store, deadline)
        time.sleep(0.05)
        assert engine.ticker_wakes == woken


def test_nothing_armed_means_no_wakes(engine: ProcessEngine) -> None:
    store = wasmtime.Store(engine.engine)
    with engine.running(store):
        engine.arm(store, time.monotonic() + 30.0)
    woken = engine.ticker_wakes
    time.sleep(CATCH_UP_SECS + 0.3)  # past the catch-up it had planned: it finds nothing armed
    assert engine.ticker_wakes <= woken + 1
    settled = engine.ticker_wakes
    time.sleep(0.5)
    assert engine.ticker_wakes == settled  # and then waits without a timeout


@pytest.mark.parametrize("deadline", [0.15, 0.45])
def test_a_spinning_guest_stops_at_its_deadline_not_before(
    deadline: float, tmp_path: Path
) -> None:
    runtime = AgentloopRuntime(memory_limit_bytes=8 << 20, max_payload_bytes=64 << 10)
    guest = compile_guest("spin", tmp_path)
    outcome: dict = {}

    def body() -> None:
        start = time.monotonic()
        try:
            runtime.activate(guest, {}, FakeBrain(), start + deadline)
        except AgentloopError as exc:
            outcome["error"] = exc
        outcome["elapsed"] = time.monotonic() - start

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert outcome["error"].code == "turn_timeout", outcome["error"].message
    assert deadline <= outcome["elapsed"] < deadline + 1.0
