"""A member's admin forgets a create once it forwarded it, and answers one nobody can take.

Both run Thespian's own admin code (tests/support/thespian_scenarios.py) with and without
brain/actors/thespian/forwarded_creates.py; docs/thespian-patches.md has the reports.
"""

from __future__ import annotations

from tests.support.thespian_scenarios import run_scenario


def test_unpatched_a_second_create_of_a_forwarded_global_name_waits_for_ever() -> None:
    """The symptom: the first create's pending entry stays, and the second create of the same
    global name is queued behind it instead of being forwarded (it is never answered)."""
    assert run_scenario("convention-forward", patched=False) == {"forwarded": 1, "pending": 1}


def test_with_the_patch_every_create_is_forwarded_and_nothing_stays_pending() -> None:
    assert run_scenario("convention-forward", patched=True) == {"forwarded": 2, "pending": 0}


def test_unpatched_a_failed_forward_with_no_member_left_raises_out_of_the_admin() -> None:
    """The symptom: the transport's failure callback raises; in the leader's admin that ends
    the admin."""
    seen = run_scenario("convention-nobody-else", patched=False)
    assert seen == {"raised": "NoCompatibleSystemForActor", "answered": []}


def test_with_the_patch_the_requester_is_told_no_system_can_create_it() -> None:
    seen = run_scenario("convention-nobody-else", patched=True)
    assert seen == {"raised": None, "answered": ["0xe02"]}  # ERROR_No_Compatible_ActorSystem
