"""Cancelling a running activation from another thread, as the session actor does on cancel.

The guests are real Wasm modules: `spin` computes forever without calling the host,
`call_forever` calls the host in a loop, `relay` makes one guest call.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from brain.agentloop import ActivationStopper, AgentloopError, AgentloopRuntime
from tests.agentloop.helpers import FakeBrain, compile_guest

TURN_SECS = 60.0  # far away: only the cancellation may stop these guests


@pytest.fixture
def runtime() -> AgentloopRuntime:
    return AgentloopRuntime(memory_limit_bytes=8 << 20, max_payload_bytes=64 << 10)


def run_in_thread(
    runtime: AgentloopRuntime, guest: Path, host, stopper, deadline=TURN_SECS, payload=None
):
    """Start an activation on its own thread; returns (thread, outcome dict)."""
    outcome: dict = {}

    def body() -> None:
        try:
            limit = None if deadline is None else time.monotonic() + deadline
            outcome["result"] = runtime.activate(guest, payload or {}, host, limit, stopper)
        except AgentloopError as exc:
            outcome["error"] = exc
        outcome["finished"] = time.monotonic()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, outcome


def test_a_computing_guest_stops_at_once_when_cancelled(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    stopper = ActivationStopper()
    thread, outcome = run_in_thread(runtime, compile_guest("spin", tmp_path), FakeBrain(), stopper)
    time.sleep(0.3)  # it is spinning now
    assert thread.is_alive()
    cancelled_at = time.monotonic()
    stopper.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert outcome["error"].code == "cancelled", outcome["error"].message
    assert outcome["finished"] - cancelled_at < 2.0  # not the 60 s deadline


def test_a_guest_calling_the_host_stops_at_its_next_guest_call(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    brain = FakeBrain()
    stopper = ActivationStopper()
    thread, outcome = run_in_thread(
        runtime, compile_guest("call_forever", tmp_path), brain, stopper
    )
    time.sleep(0.2)
    stopper.stop()
    thread.join(timeout=10)
    assert outcome["error"].code == "cancelled"
    calls_at_stop = len(brain.requests)
    time.sleep(0.1)
    assert len(brain.requests) == calls_at_stop  # no guest call after the stop


def test_a_stop_before_the_activation_starts_refuses_it(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    stopper = ActivationStopper()
    stopper.stop()
    brain = FakeBrain()
    with pytest.raises(AgentloopError) as info:
        runtime.activate(
            compile_guest("relay", tmp_path),
            {"op": "kv.read", "key": "k"},
            brain,
            time.monotonic() + TURN_SECS,
            stopper,
        )
    assert info.value.code == "cancelled"
    assert brain.requests == []


def test_a_stop_during_a_guest_call_ends_the_activation_when_the_call_returns(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    stopper = ActivationStopper()
    entered = threading.Event()

    def slow(request: dict) -> dict:
        entered.set()
        time.sleep(0.3)
        return {"answer": 1}

    thread, outcome = run_in_thread(
        runtime, compile_guest("relay", tmp_path), slow, stopper, payload={"op": "model.call"}
    )
    assert entered.wait(timeout=10)
    stopper.stop()
    thread.join(timeout=10)
    assert outcome["error"].code == "cancelled"  # the answer never reached the guest


def test_cancelling_one_activation_leaves_a_later_armed_one_running(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    spin = compile_guest("spin", tmp_path)
    first = ActivationStopper()
    second = ActivationStopper()
    thread_one, outcome_one = run_in_thread(runtime, spin, FakeBrain(), first, deadline=30.0)
    time.sleep(0.1)
    thread_two, outcome_two = run_in_thread(runtime, spin, FakeBrain(), second, deadline=120.0)
    time.sleep(0.2)
    first.stop()
    thread_one.join(timeout=10)
    assert outcome_one["error"].code == "cancelled"
    time.sleep(0.3)
    assert thread_two.is_alive()  # armed to trap later than the cancelled one: untouched
    second.stop()
    thread_two.join(timeout=10)
    assert outcome_two["error"].code == "cancelled"


def test_without_a_turn_deadline_a_guest_calling_the_host_still_stops_on_cancel(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    """With no turn deadline the store is armed too far away to advance to (docs/agentloop.md:
    a guest computing without guest calls then runs on); guest calls still see the stop."""
    stopper = ActivationStopper()
    brain = FakeBrain()
    thread, outcome = run_in_thread(
        runtime, compile_guest("call_forever", tmp_path), brain, stopper, deadline=None
    )
    time.sleep(0.2)
    stopper.stop()
    thread.join(timeout=10)
    assert outcome["error"].code == "cancelled"
