"""A session actor died holding requests it never answered; the registry hands them to the
recovery as orphans and the new actor answers each once the interrupted work is recorded
(brain/sessions/core.py, `_recover`). No actor, no disk (tests/sessions/harness.py)."""

from __future__ import annotations

from brain import errors
from brain.protocol.messages import Orphan, Recover
from brain.sessions.state import Opened, Requester
from tests.sessions.harness import Session, client_replies


def reopened_after_death(session: Session) -> Session:
    """A new core opening the journal the dead actor left."""
    after = Session()
    after.feed(Opened(session.state.projection))
    return after


def replies_by_request(step) -> dict[str, object]:
    return {reply.requester.request_id: reply for reply in client_replies(step)}


def test_a_sync_send_whose_turn_was_interrupted_gets_its_turn_result() -> None:
    session = Session().running()
    turn = session.state.turn.sequence
    after = reopened_after_death(session)
    assert after.kinds()[-1] == "turn_failed"
    step = after.command(Recover((Orphan("send-1", "web-a", True),
                                  Orphan("cancel-1", "web-b", False))))
    replies = replies_by_request(step)
    answer = replies["send-1"]
    assert answer.requester == Requester("web-a", "send-1")
    assert answer.body == {"session_id": "s-1", "sequence": turn, "status": "failed",
                           "error": after.records[-1]["error"]}
    assert answer.body["error"]["code"] == "interrupted"
    other = replies["cancel-1"]
    assert isinstance(other.error, errors.Internal) and other.body is None
    assert "recovered" in str(other.error)
    assert not step.records  # answering records nothing more


def test_a_send_with_no_turn_interrupted_gets_an_error_not_a_turn_result() -> None:
    """The actor died before the send's turn_started was durable: no turn of it exists."""
    session = Session().created()
    after = reopened_after_death(session)
    assert after.state.interrupted_turn is None
    step = after.command(Recover((Orphan("send-1", "web-a", True),)))
    [reply] = [r for r in client_replies(step) if r.requester.request_id == "send-1"]
    assert isinstance(reply.error, errors.Internal)


def test_an_earlier_interrupted_turn_is_not_taken_for_this_send() -> None:
    """The last turn failed `interrupted` in an earlier recovery; this open recorded nothing,
    so an orphaned send is not answered with that old turn."""
    session = Session().running()
    once = reopened_after_death(session)
    twice = reopened_after_death(once)
    assert twice.state.projection.turn["status"] == "failed"
    step = twice.command(Recover((Orphan("send-2", "web-a", True),)))
    [reply] = [r for r in client_replies(step) if r.requester.request_id == "send-2"]
    assert reply.body is None and isinstance(reply.error, errors.Internal)


def test_a_start_up_recovery_has_no_orphans_and_answers_nobody_new() -> None:
    session = Session().running()
    after = reopened_after_death(session)
    step = after.command(Recover())
    assert [r.requester.request_id for r in client_replies(step)] == ["r1"]
