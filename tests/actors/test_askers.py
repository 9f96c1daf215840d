"""What the registry remembers of who waits on a placed session (brain/actors/registry/askers.py),
without actors: the orphans a dead actor's recovery answers."""

from __future__ import annotations

from brain.actors.registry.askers import ASKERS_KEPT, Askers
from brain.protocol.messages import CancelTurn, Orphan, Outcomes, StartTurn
from brain.sessions.state import Requester, Turn


def test_sync_sends_wait_for_their_turn_and_other_askers_for_an_answer() -> None:
    askers = Askers()
    askers.forwarded("send-1", StartTurn("hi", "send"), "web-a")
    askers.forwarded("submit-1", StartTurn("hi", "submit"), "web-a")
    askers.forwarded("cancel-1", CancelTurn(), "web-b")
    askers.forwarded("outcome-1", Outcomes(()), None)  # fire-and-forget: nobody waits
    assert askers.orphans() == (Orphan("send-1", "web-a", True),
                                Orphan("submit-1", "web-a", False),
                                Orphan("cancel-1", "web-b", False))


def test_a_resumed_turn_brings_its_sync_sender_along() -> None:
    askers = Askers()
    askers.resumed(Turn(5, 6, Requester("web-a", "send-9")))
    askers.resumed(Turn(7, 8, None))  # a submit's turn: nobody waits
    askers.resumed(Turn(9, 10, Requester(None, "admitted")))
    assert askers.orphans() == (Orphan("send-9", "web-a", True),)


def test_only_the_latest_askers_are_kept() -> None:
    askers = Askers()
    for n in range(ASKERS_KEPT + 10):
        askers.forwarded(f"r{n}", CancelTurn(), "web")
    kept = askers.orphans()
    assert len(kept) == ASKERS_KEPT
    assert kept[0].request_id == "r10" and kept[-1].request_id == f"r{ASKERS_KEPT + 9}"
