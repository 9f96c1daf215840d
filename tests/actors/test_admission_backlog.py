"""The registry's admission backlog (brain/actors/registry/admission.py), without actors: in
arrival order, except that a session an idle actor keeps may go first, a bounded number of
times."""

from __future__ import annotations

from brain.actors.registry.admission import PREFER_WINDOW, Backlog
from brain.protocol.messages import StartTurn, ToSession


def queued(*session_ids: str) -> Backlog:
    backlog = Backlog(limit=None, wait_secs=60)
    for session_id in session_ids:
        assert backlog.add(ToSession(f"r-{session_id}", session_id, StartTurn("hi", "send")), None)
    return backlog


def test_the_backlog_serves_in_arrival_order_with_no_preference() -> None:
    backlog = queued("a", "b", "c")
    assert [backlog.pop()[0] for _ in range(3)] == ["a", "b", "c"]


def test_a_kept_session_near_the_head_goes_first() -> None:
    backlog = queued("a", "b", "c")
    session_id, waiting, waited = backlog.pop(lambda s: s == "c")
    assert session_id == "c" and waiting[0][0].request_id == "r-c" and len(waited) == 1
    assert [backlog.pop(lambda s: False)[0] for _ in range(2)] == ["a", "b"]


def test_a_kept_session_past_the_window_waits_its_turn() -> None:
    ids = [f"s{n}" for n in range(PREFER_WINDOW + 1)]
    backlog = queued(*ids)
    assert backlog.pop(lambda s: s == ids[-1])[0] == "s0"


def test_the_head_is_passed_over_at_most_the_window_times() -> None:
    ids = [f"s{n}" for n in range(3 * PREFER_WINDOW)]
    backlog = queued(*ids)
    order = [backlog.pop(lambda s: s != "s0")[0] for _ in range(PREFER_WINDOW + 1)]
    assert order[:PREFER_WINDOW] == ids[1:PREFER_WINDOW + 1]
    assert order[PREFER_WINDOW] == "s0", "then the head goes, whatever is preferred"
