"""Thespian's ports listen on the configured address only (brain/actors/thespian/confine.py),
shown on an endpoint of a fresh interpreter with and without the patch."""

from __future__ import annotations

from tests.support.thespian_scenarios import run_scenario


def test_an_endpoint_listens_on_loopback_only_once_confined() -> None:
    shipped = run_scenario("confine", patched=False)
    fixed = run_scenario("confine", patched=True)
    assert shipped["listens_on"] == "0.0.0.0"  # every interface, THESPIAN_BASE_IPADDR or not
    assert fixed == {"listens_on": "127.0.0.1", "fits_after": True}
