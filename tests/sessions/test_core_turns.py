"""A turn in the session core: guest ops, every effect outcome, cancel and deadline in each part
of a turn, limits. No actor, no disk (tests/sessions/harness.py)."""

from __future__ import annotations

import pytest

from brain.effects import FAILURES, Outcome
from brain.protocol.effects import CancelEffect, EffectDone, RunModelCall, RunToolCall
from brain.protocol.messages import (
    CancelGrace,
    CancelTurn,
    StartTurn,
    TurnDeadline,
)
from brain.protocol.targets import Target
from brain.sessions import core
from brain.sessions.state import (
    ActivationFinished,
    GuestCall,
    Phase,
    StopActivation,
    Telemetry,
)
from brain.sessions.turns import CANCEL_GRACE_SECS
from tests.sessions.harness import SESSION, Session, guest_answers, only_reply, sent

MESSAGES = [{"role": "user", "content": "hi"}]
COMPLETED = {"status": "completed", "output": "done"}


def model_call(session: Session) -> int:
    step = session.guest("model.call", messages=MESSAGES)
    [run] = sent(step, RunModelCall)
    assert step.sends[0].to == Target.MODEL_EXECUTOR
    [record] = step.records
    assert record["kind"] == "model_call_started" and run.started == record["seq"]
    assert guest_answers(step) == {}  # the guest waits for the outcome
    return run.started


def finish(session: Session, result=COMPLETED, error=None):
    return session.feed(ActivationFinished(session.state.turn.sequence, result, error))


# --- guest ops ------------------------------------------------------------------------------


def test_reads_answer_from_the_projection_and_writes_commit_first() -> None:
    session = Session().running()
    step = session.guest("kv.put", key="k", value=[1])
    assert session.kinds(step) == ["kv_put"]
    assert guest_answers(step) == {1: {"sequence": step.records[0]["seq"]}}
    assert guest_answers(session.guest("kv.read", key="k")) == {2: {"found": True, "value": [1]}}
    assert guest_answers(session.guest("kv.delete", key="nope")) == {3: {"sequence": None}}
    step = session.guest("transcript.set", messages=MESSAGES)
    assert step.records[0]["kind"] == "transcript_changed"
    answer = guest_answers(session.guest("transcript.read"))[5]
    assert answer["messages"] == MESSAGES
    assert guest_answers(session.guest("transcript.set", messages=MESSAGES)) == \
        {6: {"sequence": None}}  # unchanged: nothing journaled


@pytest.mark.parametrize("op,args,code", [
    ("kv.put", {"key": ""}, "invalid_request"),
    ("kv.put", {"key": "k"}, "invalid_request"),
    ("model.call", {"messages": "hi"}, "invalid_request"),
    ("model.call", {"messages": [], "tools": ["nope"]}, "invalid_request"),
    ("tools.call", {"calls": []}, "invalid_request"),
    ("tools.call", {"calls": [{"name": "nope"}]}, "invalid_request"),
    ("events.emit", {"kind": "turn_ended", "data": {}}, "invalid_request"),
    ("telemetry.record", {}, "invalid_request"),
    ("no.such.op", {}, "invalid_request"),
])
def test_a_refused_op_answers_an_error_and_changes_nothing(op, args, code) -> None:
    session = Session().running()
    step = session.guest(op, **args)
    assert step.records == () and step.sends == ()
    assert guest_answers(step)[1]["error"]["code"] == code


def test_tools_list_answers_the_session_tools_as_the_model_sees_them() -> None:
    session = Session().running()
    answer = guest_answers(session.guest("tools.list"))
    [tools] = answer.values()
    configured = session.state.projection.config.get("tools", [])
    assert [t["name"] for t in tools["tools"]] == [t["name"] for t in configured]
    assert all(set(t) >= {"name", "description", "input_schema"} for t in tools["tools"])


def test_a_guest_call_with_no_turn_is_an_internal_error() -> None:
    session = Session().created()
    step = session.feed(GuestCall(9, {"op": "kv.read", "key": "k"}))
    assert guest_answers(step)[9]["error"]["code"] == "internal"


def test_telemetry_is_an_action_and_events_are_journaled_with_their_origin() -> None:
    session = Session().running()
    step = session.guest("telemetry.record", name="n", value=1)
    [telemetry] = step.actions
    assert isinstance(telemetry, Telemetry) and telemetry.line["name"] == "n"
    step = session.guest("events.emit", kind="progress", data={"p": 1})
    assert step.records[0]["origin"] == {"kind": "agentloop",
                                         "sequence": session.state.turn.activation}


# --- outcomes -------------------------------------------------------------------------------


def test_a_model_result_is_durable_before_the_guest_sees_it() -> None:
    session = Session().running()
    started = model_call(session)
    result = {"message": {"role": "assistant", "content": "ok"}}
    step = session.done(started, result=result)
    assert step.records[0] == {**step.records[0], "kind": "model_call_ended", "started": started,
                               "result": result, "outcome": "ok"}
    assert guest_answers(step) == {1: result}


@pytest.mark.parametrize("outcome", FAILURES)
def test_every_model_failure_outcome(outcome: Outcome) -> None:
    session = Session().running()
    started = model_call(session)
    step = session.done(started, outcome, error={"message": "nope", "status": 503})
    [record] = step.records
    assert (record["kind"], record["outcome"], record["error"]) == \
        ("model_call_failed", outcome.value, {"message": "nope", "status": 503})
    assert guest_answers(step) == {1: {"error": {"code": "model_call_failed",
                                                 "outcome": outcome.value, "message": "nope"}}}


@pytest.mark.parametrize("outcome", list(Outcome))
def test_every_tool_outcome_and_results_in_call_order(outcome: Outcome) -> None:
    session = Session().running()
    step = session.guest("tools.call", calls=[{"name": "echo", "id": "a", "input": 1},
                                              {"name": "clock", "id": "b"}])
    first, second = [run.started for run in sent(step, RunToolCall)]
    assert session.kinds(step) == ["tool_call_started", "tool_call_started"]
    assert {s.to for s in step.sends} == {Target.TOOL_EXECUTOR}
    assert sent(step, RunToolCall)[0].deadline == pytest.approx(session.now / 1000 - 0.007 + 5)
    later = session.done(second, Outcome.OK, result={"content": "2", "is_error": False})
    assert guest_answers(later) == {}  # the batch waits for every call
    error = None if outcome is Outcome.OK else {"message": "went wrong"}
    last = session.done(first, outcome, result={"content": "1", "is_error": False}, error=error)
    [record] = last.records
    terminal = "tool_call_ended" if outcome is Outcome.OK else "tool_call_failed"
    assert (record["kind"], record["outcome"]) == (terminal, outcome.value)
    assert record["result"]["is_error"] is (outcome is not Outcome.OK)
    [answer] = guest_answers(last).values()
    assert [r["content"] for r in answer["results"]] == ["1", "2"]
    assert answer["results"][0]["outcome"] == outcome.value


def test_tool_events_within_budget_are_committed_with_the_outcome() -> None:
    session = Session().running()
    [run] = sent(session.guest("tools.call", calls=[{"name": "echo"}]), RunToolCall)
    step = session.done(run.started, result={"content": 1, "is_error": False},
                        events=({"kind": "progress", "data": "x"},
                                {"kind": "huge", "data": "y" * 500}))
    assert session.kinds(step) == ["tool_call_ended", "extension_event"]
    assert step.records[1]["origin"] == {"kind": "tool", "sequence": run.started}
    [answer] = guest_answers(step).values()
    assert answer["results"][0]["events_refused"][0]["code"] == "emit_limit"
    last = finish(session)
    assert last.records[-1]["kind"] == "turn_failed"
    assert last.records[-1]["error"]["code"] == "emit_limit"


def test_an_outcome_nobody_awaits_is_noted_not_committed() -> None:
    session = Session().running()
    step = session.done(999, result={})
    assert step.records == () and step.notes


def test_the_model_call_limit_fails_the_turn() -> None:
    session = Session().running()
    for _ in range(3):
        started = model_call(session)
        session.done(started, result={})
    step = session.guest("model.call", messages=MESSAGES)
    assert guest_answers(step)[4]["error"]["code"] == "model_call_limit"
    assert step.records == ()
    assert finish(session).records[-1]["error"]["code"] == "model_call_limit"


# --- the end of a turn, cancel and the deadline ---------------------------------------------


def test_a_completed_turn_answers_its_send_with_the_output() -> None:
    session = Session().running()
    step = finish(session)
    assert session.kinds(step) == ["activation_ended", "turn_ended"]
    body = only_reply(step).body
    assert (body["status"], body["output"]) == ("ended", "done")
    assert step.checkpoint and step.state.phase is Phase.IDLE and step.state.turn is None


def test_an_effect_out_when_the_activation_ends_becomes_unknown() -> None:
    session = Session().running()
    started = model_call(session)
    step = finish(session, None, {"code": "agentloop_error", "message": "trap"})
    assert session.kinds(step) == ["model_call_failed", "activation_failed", "turn_failed"]
    assert step.records[0]["outcome"] == "unknown" and step.records[0]["started"] == started
    assert only_reply(step).body["error"]["code"] == "agentloop_error"
    assert session.done(started, result={}).records == ()  # too late: one terminal only


def test_cancel_while_the_guest_computes_stops_the_guest() -> None:
    session = Session().running()
    step = session.command(CancelTurn())
    assert session.kinds(step) == ["cancel_requested"]
    assert StopActivation() in step.actions and step.sends == ()
    assert [t.secs for t in step.timers] == [CANCEL_GRACE_SECS]
    answer = guest_answers(session.guest("model.call", messages=MESSAGES))
    assert answer[1]["error"]["code"] == "cancelled"  # no effect starts once stopping
    assert finish(session, None, {"code": "cancelled", "message": "stopped"}).records[-1][
        "error"]["code"] == "cancelled"


def test_cancel_while_effects_are_out_forwards_it_and_waits_bounded() -> None:
    session = Session().running()
    started = model_call(session)
    [tool] = sent(session.guest("tools.call", calls=[{"name": "echo"}]), RunToolCall)
    step = session.command(CancelTurn())
    cancels = {(s.to, s.message.started) for s in step.sends
               if isinstance(s.message, CancelEffect)}
    assert cancels == {(Target.MODEL_EXECUTOR, started),
                       (Target.TOOL_EXECUTOR, tool.started)}
    session.done(started, Outcome.CANCELLED, error={"message": "cancelled"})
    grace = session.feed(CancelGrace(session.state.turn.sequence))
    [record] = grace.records
    assert (record["kind"], record["started"], record["outcome"]) == \
        ("tool_call_failed", tool.started, "unknown")
    assert guest_answers(grace)[2]["results"][0]["outcome"] == "unknown"
    last = finish(session, {"status": "failed", "error": {"code": "tool_failed"}})
    assert last.records[-1]["error"]["code"] == "cancelled"  # the cause, not its symptom


def test_cancel_of_an_ending_turn_and_a_second_cancel_change_nothing_more() -> None:
    session = Session().running()
    session.command(CancelTurn())
    again = session.command(CancelTurn())
    assert session.kinds(again) == ["cancel_requested"]
    assert again.actions == () and again.timers == ()


def test_the_deadline_stops_the_turn_as_a_timeout() -> None:
    session = Session().running()
    [deadline] = [t for t in session.steps[-1].timers if isinstance(t.payload, TurnDeadline)]
    assert deadline.secs == 60
    started = model_call(session)
    step = session.feed(deadline.payload)
    assert step.records == () and step.state.phase is Phase.STOPPING
    assert StopActivation() not in step.actions  # the runtime has its own deadline
    assert [s.message.started for s in step.sends] == [started]
    last = finish(session, None, {"code": "agentloop_error", "message": "trap"})
    assert last.records[-1]["error"]["code"] == "turn_timeout"


def test_timers_of_an_older_turn_are_ignored() -> None:
    session = Session().running()
    old = session.state.turn.sequence
    finish(session)
    session.command(StartTurn("again", "send"))
    assert session.feed(TurnDeadline(old)).state.phase is Phase.RUNNING
    assert session.feed(CancelGrace(old)).records == ()
    assert session.feed(ActivationFinished(old, COMPLETED, None)).records == ()


def test_outcomes_that_arrive_together_make_one_batch_equal_to_stepping_each() -> None:
    """core.step_all: the group commit of outcomes an executor sent in one message."""
    one_by_one, together = Session().running(), Session().running()
    calls = [{"name": "echo", "id": "a", "input": 1}, {"name": "clock", "id": "b"}]
    runs = [run.started for run in sent(one_by_one.guest("tools.call", calls=calls),
                                        RunToolCall)]
    together.guest("tools.call", calls=calls)
    results = [EffectDone(SESSION, started, Outcome.OK,
                          result={"content": str(n), "is_error": False})
               for n, started in enumerate(runs)]
    separate = [one_by_one.feed(done) for done in results]
    merged = core.step_all(together.state, results, one_by_one.now - 14)
    assert [r["kind"] for r in merged.records] == ["tool_call_ended", "tool_call_ended"]
    assert [r["seq"] for r in merged.records] == \
        [r["seq"] for s in separate for r in s.records]
    assert merged.replies == tuple(x for s in separate for x in s.replies)
    assert guest_answers(merged) == guest_answers(separate[-1])  # answered once, after both
    assert merged.state.turn.pending == separate[-1].state.turn.pending == {}
