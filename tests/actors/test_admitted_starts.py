"""Admitted turns held back during a burst of submits (brain/actors/registry/admitted_starts.py)."""

from __future__ import annotations

from brain.actors.registry.admitted_starts import DeferredStarts


def test_turns_start_in_order_once_the_submits_are_quiet() -> None:
    held = DeferredStarts(quiet_secs=0.05, max_defer_secs=1.0)
    assert held.add(["a", "b"], now=10.0), "the first of a burst arms the timer"
    assert not held.add(["c"], now=10.03)
    assert held.due(10.06) == [], "a batch came 30 ms ago"
    assert abs(held.next_check(10.06) - 0.02) < 1e-9
    assert held.due(10.09) == ["a", "b", "c"]
    assert len(held) == 0 and held.due(11.0) == []


def test_a_burst_that_never_quiets_starts_its_turns_after_the_longest_wait() -> None:
    held = DeferredStarts(quiet_secs=0.05, max_defer_secs=1.0)
    held.add(["a"], now=0.0)
    for step in range(1, 25):
        held.add([f"s{step}"], now=step * 0.04)
        if step * 0.04 < 1.0:
            assert held.due(step * 0.04) == []
    assert held.due(1.0)[0] == "a"


def test_a_session_taken_out_is_not_started_again_and_repeats_are_held_once() -> None:
    held = DeferredStarts()
    held.add(["a", "b", "a"], now=0.0)
    assert "a" in held and len(held) == 2
    assert held.take("a") and not held.take("a")
    assert held.due(5.0) == ["b"]
