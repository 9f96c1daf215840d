"""An actor's process is titled as Brain's (brain/actors/thespian/proctitle.py) and stays in its
starter's session (brain/actors/thespian/no_daemon.py), in a real actor system of a fresh
interpreter, with and without each patch."""

from __future__ import annotations

from tests.support.thespian_scenarios import run_scenario


def test_an_actor_process_is_titled_as_brains() -> None:
    shipped = run_scenario("proctitle", patched=False)
    fixed = run_scenario("proctitle", patched=True)
    assert shipped["actor"]["title"].startswith("Reporter ActorAddr-")
    assert fixed["actor"]["title"] == "brain: reporter"
    assert fixed["fits_after"] is True


def test_an_actor_process_stays_in_its_starters_session() -> None:
    shipped = run_scenario("no-daemon", patched=False)
    fixed = run_scenario("no-daemon", patched=True)
    assert shipped["actor"]["sid"] != shipped["sid"]  # the admin made a session of its own
    assert fixed["actor"]["sid"] == fixed["sid"]
    assert fixed["fits_after"] is True
