"""Admission without an actor in the session core: `core.admit` decides a submit as an actor
would and holds only `turn_started`; opening a journal whose turn was admitted in this run
starts it, while the same shape left by a crash fails `interrupted`. No actor, no disk."""

from __future__ import annotations

from brain.protocol.messages import StartTurn
from brain.sessions import core
from brain.sessions.state import AdmittedTurn, Opened, Phase, StartActivation
from tests.sessions.harness import Session, only_reply


def admitted_session() -> tuple[Session, int]:
    """A created session, then a submit admitted by `core.admit` (as a web worker does)."""
    session = Session().created()
    step = core.admit(session.state, StartTurn("hi", "submit"), session.now)
    [record] = step.records
    assert record["kind"] == "turn_started" and record["mode"] == "submit"
    reply = only_reply(step)
    assert reply.body == {"session_id": session.state.session_id, "sequence": record["seq"]}
    assert step.actions == () and step.sends == () and step.timers == ()
    return session, record["seq"]


def reopened(session: Session, sequence: int, admitted: bool) -> Session:
    """A fresh core for the same journal: the records so far plus the admitted turn_started."""
    projection = core.admit(session.state, StartTurn("hi", "submit"), session.now).state.projection
    fresh = Session()
    fresh.feed(Opened(projection, AdmittedTurn(sequence, "hi") if admitted else None))
    return fresh


def test_admit_refuses_as_an_actor_would() -> None:
    session = Session().running()
    reply = only_reply(core.admit(session.state, StartTurn("x", "submit"), session.now))
    assert reply.error is not None and reply.error.code == "session_busy"
    ended = Session().ended()
    reply = only_reply(core.admit(ended.state, StartTurn("x", "submit"), ended.now))
    assert reply.error is not None and reply.error.code == "session_ended"


def test_an_admitted_turn_starts_when_an_actor_opens_the_journal() -> None:
    session, sequence = admitted_session()
    fresh = reopened(session, sequence, admitted=True)
    step = fresh.steps[-1]
    assert fresh.kinds(step) == ["activation_started"]
    assert step.records[0]["turn"] == sequence
    [start] = [a for a in step.actions if isinstance(a, StartActivation)]
    assert start.turn == sequence and start.payload["input"] == "hi"
    assert fresh.state.phase is Phase.RUNNING and fresh.state.turn.requester is None
    busy = only_reply(fresh.command(StartTurn("again", "submit")))
    assert busy.error is not None and busy.error.code == "session_busy"


def test_the_same_shape_left_by_a_crash_fails_interrupted() -> None:
    session, sequence = admitted_session()
    fresh = reopened(session, sequence, admitted=False)
    step = fresh.steps[-1]
    assert fresh.kinds(step) == ["turn_failed"]
    assert step.records[0]["error"]["code"] == "interrupted"
    assert not any(isinstance(a, StartActivation) for a in step.actions)
    assert fresh.state.phase is Phase.IDLE
