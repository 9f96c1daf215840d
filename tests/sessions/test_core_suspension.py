"""Suspended turns in the session core: a turn waiting on parked effects lets its actor go, and
any actor given the turn back carries it on: an outcome resumes the guest, a command that
leaves it waiting lets the session go again, a cancel or the deadline end it without the guest.
No actor, no disk (tests/sessions/harness.py)."""

from __future__ import annotations

from dataclasses import replace

from brain.effects import Outcome
from brain.protocol.effects import CancelEffect, EffectDone, Parked
from brain.protocol.messages import (
    CancelTurn,
    EndSession,
    ExpireTurn,
    Outcomes,
    ReleaseMe,
    StartTurn,
    TurnDeadline,
)
from brain.sessions.state import (
    ActivationFinished,
    Opened,
    Phase,
    ResumeActivation,
    StopActivation,
    SuspendActivation,
    Turn,
)
from tests.sessions.harness import LIMITS, SESSION, Session, client_replies, guest_answers, sent

MESSAGES = [{"role": "user", "content": "hi"}]
ANSWER = {"message": {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
          "stop_reason": "end_turn", "usage": {}}


def waiting_on_the_model(session: Session) -> int:
    session.guest("transcript.set", messages=MESSAGES)
    step = session.guest("model.call", messages=MESSAGES)
    return step.records[0]["seq"]


def suspended(session: Session, started: int) -> Turn:
    """Park `started`; the step suspends the turn and hands it over. The suspended Turn."""
    step = session.feed(Parked(SESSION, started))
    assert step.actions == (SuspendActivation(),)
    [release] = sent(step, ReleaseMe)
    assert release.suspended is not None and release.suspended.suspended
    assert release.handled == session.state.handled
    assert step.records == ()  # suspending commits nothing: the journal has all it needs
    return release.suspended


def carried_on(before: Session, turn: Turn) -> Session:
    """Another actor (a fresh core) opens the session with the suspended turn."""
    after = Session()
    after.now = before.now
    after.requests = before.requests
    step = after.feed(Opened(before.state.projection, suspended=turn))
    assert step.records == () and after.state.phase is Phase.RUNNING
    assert after.state.turn == turn
    return after


def test_a_turn_waiting_on_a_parked_model_call_is_suspended_and_resumed_by_its_outcome():
    session = Session().running()
    started = waiting_on_the_model(session)
    turn = suspended(session, started)
    assert turn.pending.keys() == {started} and turn.parked == {started}
    after = carried_on(session, turn)
    step = after.command(Outcomes((EffectDone(SESSION, started, Outcome.OK, result=ANSWER),)))
    assert after.kinds(step) == ["model_call_ended"]  # committed before anyone sees it
    assert step.actions == (ResumeActivation(turn.sequence, turn.activation,
                                             after.state.projection.config["agentloop"]),)
    assert guest_answers(step) == {}  # the replay answers the resumed guest, from the journal
    assert not after.state.turn.suspended and not after.state.turn.pending
    assert sent(step, ReleaseMe) == [], "a resumed turn holds its actor while the guest runs"
    step = after.feed(ActivationFinished(turn.sequence, {"status": "completed", "output": "ok"},
                                         None))
    assert after.kinds(step) == ["activation_ended", "turn_ended"]
    [reply] = client_replies(step)
    assert reply.requester == turn.requester  # the sync send that began the turn hears it
    assert reply.body["status"] == "ended"


def test_only_a_turn_whose_every_pending_effect_is_parked_is_suspended():
    session = Session().running()
    step = session.guest("tools.call", calls=[{"name": "echo", "input": {}},
                                              {"name": "clock", "input": {}}])
    first, second = (record["seq"] for record in step.records)
    step = session.feed(Parked(SESSION, first))
    assert step.actions == () and sent(step, ReleaseMe) == []
    suspended(session, second)


def test_a_parked_note_for_an_effect_already_settled_changes_nothing():
    session = Session().running()
    started = waiting_on_the_model(session)
    session.done(started, result=ANSWER)
    step = session.feed(Parked(SESSION, started))
    assert step.actions == () and step.sends == () and not session.state.turn.suspended


def test_one_outcome_of_several_commits_and_lets_the_session_go_again():
    session = Session().running()
    step = session.guest("tools.call", calls=[{"name": "echo", "input": {}},
                                              {"name": "clock", "input": {}}])
    first, second = (record["seq"] for record in step.records)
    session.feed(Parked(SESSION, first))
    turn = suspended(session, second)
    after = carried_on(session, turn)
    step = after.command(Outcomes((EffectDone(SESSION, first, Outcome.OK,
                                              result={"content": "a", "is_error": False}),)))
    assert after.kinds(step) == ["tool_call_ended"]
    [release] = sent(step, ReleaseMe)
    assert release.suspended.pending.keys() == {second}
    assert release.suspended.batches  # the first result waits in the batch for the second
    third = carried_on(after, release.suspended)
    step = third.command(Outcomes((EffectDone(SESSION, second, Outcome.OK,
                                              result={"content": "b", "is_error": False}),)))
    assert [type(a) for a in step.actions] == [ResumeActivation]


def test_a_command_on_a_suspended_turn_is_answered_and_the_session_let_go_again():
    session = Session().running()
    turn = suspended(session, waiting_on_the_model(session))
    after = carried_on(session, turn)
    step = after.command(StartTurn("again", "send"))
    assert client_replies(step)[0].error.code == "session_busy"
    [release] = sent(step, ReleaseMe)
    assert release.suspended == turn


def test_an_end_waits_for_the_suspended_turn_in_its_actor():
    session = Session().running()
    turn = suspended(session, waiting_on_the_model(session))
    after = carried_on(session, turn)
    step = after.command(EndSession())
    assert sent(step, ReleaseMe) == [], "the end waits here for the turn"
    assert after.state.waiting_ends


def test_a_cancelled_suspended_turn_ends_without_its_guest_once_its_effects_answer():
    session = Session().running()
    started = waiting_on_the_model(session)
    turn = suspended(session, started)
    after = carried_on(session, turn)
    step = after.command(CancelTurn())
    assert after.kinds(step) == ["cancel_requested"]
    assert StopActivation() not in step.actions  # no instance runs
    assert [c.started for c in sent(step, CancelEffect)] == [started]
    assert sent(step, ReleaseMe) == [], "being stopped, the turn keeps its actor (bounded)"
    step = after.command(Outcomes((EffectDone(SESSION, started, Outcome.CANCELLED,
                                              error={"message": "cancelled"}),)))
    assert after.kinds(step) == ["model_call_failed", "activation_failed", "turn_failed"]
    assert step.records[-1]["error"]["code"] == "cancelled"
    assert not [a for a in step.actions if isinstance(a, ResumeActivation)]
    assert after.state.phase is Phase.IDLE


def test_a_suspended_turn_past_its_deadline_is_stopped_and_ends_turn_timeout():
    session = Session().running()
    started = waiting_on_the_model(session)
    turn = suspended(session, started)
    after = carried_on(session, turn)
    step = after.command(ExpireTurn(turn.sequence))
    assert [c.started for c in sent(step, CancelEffect)] == [started]
    step = after.command(Outcomes((EffectDone(SESSION, started, Outcome.CANCELLED,
                                              error={"message": "cancelled"}),)))
    assert step.records[-1]["kind"] == "turn_failed"
    assert step.records[-1]["error"]["code"] == "turn_timeout"


def test_the_deadline_timer_is_armed_again_with_what_is_left():
    session = Session().running()
    turn = suspended(session, waiting_on_the_model(session))
    after = Session()
    after.now = turn.deadline_ms - 1500
    step = after.feed(Opened(session.state.projection, suspended=turn))
    [timer] = step.timers
    assert timer.payload == TurnDeadline(turn.sequence) and timer.secs == 1.5


def test_a_suspended_turn_the_journal_does_not_match_fails_interrupted():
    session = Session().running()
    turn = suspended(session, waiting_on_the_model(session))
    stale = replace(turn, pending={})  # the registry's turn and the journal disagree
    after = Session()
    step = after.feed(Opened(session.state.projection, suspended=stale))
    assert after.kinds(step) == ["model_call_failed", "activation_failed", "turn_failed"]
    assert step.records[-1]["error"]["code"] == "interrupted"
    assert step.notes


def test_the_model_call_limit_holds_across_a_suspension():
    session = Session().running()
    for _ in range(LIMITS.max_model_calls):
        started = waiting_on_the_model(session)
        turn = suspended(session, started)
        session = carried_on(session, turn)
        session.command(Outcomes((EffectDone(SESSION, started, Outcome.OK, result=ANSWER),)))
    step = session.guest("model.call", messages=MESSAGES)
    assert guest_answers(step)[session.calls]["error"]["code"] == "model_call_limit"
    assert step.records == ()


def test_the_dropped_instance_ending_is_no_turn_end():
    session = Session().running()
    turn = suspended(session, waiting_on_the_model(session))
    step = session.feed(ActivationFinished(turn.sequence, None,
                                           {"code": "suspended", "message": "suspended"}))
    assert step.records == () and session.state.turn.suspended


def test_a_tool_outcome_s_refused_events_are_journaled_with_it():
    session = Session().running()
    step = session.guest("tools.call", calls=[{"name": "echo", "input": {}}])
    started = step.records[0]["seq"]
    step = session.done(started, result={"content": "x", "is_error": False},
                        events=({"kind": "turn_ended", "data": {}},))
    [terminal] = step.records
    assert terminal["events_refused"][0]["kind"] == "turn_ended"
    answer = guest_answers(step)[session.calls]["results"][0]
    assert answer["events_refused"] == terminal["events_refused"]


def test_outcomes_routed_to_an_actor_that_still_holds_the_turn_answer_the_live_guest():
    session = Session().running()
    step = session.guest("tools.call", calls=[{"name": "echo", "input": {}},
                                              {"name": "clock", "input": {}}])
    first, second = (record["seq"] for record in step.records)
    session.feed(Parked(SESSION, first))  # one parked: the turn stays here
    session.done(second, result={"content": "b", "is_error": False})
    step = session.command(Outcomes((EffectDone(SESSION, first, Outcome.OK,
                                                result={"content": "a", "is_error": False}),)))
    results = guest_answers(step)[session.calls]["results"]
    assert [r["content"] for r in results] == ["a", "b"]
    assert step.sends == () and step.actions == ()
