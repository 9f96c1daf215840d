"""Arming a wakeup inserts it in place (brain/actors/thespian/wakeups.py): same order, far fewer
comparisons."""

from __future__ import annotations

from tests.support.thespian_scenarios import run_scenario


def test_a_thousand_wakeups_stay_in_order_with_a_fiftieth_of_the_comparisons() -> None:
    shipped = run_scenario("wakeups", patched=False)
    fixed = run_scenario("wakeups", patched=True)
    assert shipped["armed"] == fixed["armed"] == 1000
    assert shipped["in_order"] and fixed["in_order"]
    assert shipped["comparisons"] > 50 * fixed["comparisons"]
