"""Replay of a resumed activation (brain/sessions/replay.py): every guest call is answered as
it was live, from the journal, and the first call that would record something else diverges.

The live turns here are run by the session core (tests/sessions/harness.py); the replayed
ones first by hand, then by the real default Agentloop in a real wasmtime instance."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from brain.actors.session.activation import (
    SUSPENDED,
    SUSPENDED_CODE,
    PendingGuestCall,
    start_activation,
)
from brain.agentloop import DEFAULT_AGENTLOOP, AgentloopRuntime
from brain.effects import Outcome
from brain.journal import empty_projection, fold_all
from brain.protocol.effects import EffectDone, Parked
from brain.protocol.messages import Outcomes
from brain.sessions.replay import (
    DIVERGED,
    ActivationHistory,
    Diverged,
    Replay,
    activation_history,
)
from brain.sessions.state import ActivationFinished, ResumeActivation, SuspendActivation
from brain.sessions.turns import activation_payload
from tests.sessions.harness import LIMITS, SESSION, Session, guest_answers

USER = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
ANSWER = {"message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
          "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}
TOOL_ASK = {"message": {"role": "assistant", "content": [
    {"type": "tool_call", "id": "c1", "name": "echo", "input": {"x": 1}}]},
    "stop_reason": "tool_use", "usage": {}}


def history_of(session: Session) -> ActivationHistory:
    """The ActivationHistory of the session's running turn, as an open would read it."""
    turn = session.state.turn
    records = session.records
    before = fold_all(empty_projection(), [r for r in records if r["seq"] < turn.sequence])
    after = [r for r in records if r["seq"] >= turn.sequence]
    return activation_history(before, after, turn.sequence, turn.activation)


def replay_of(session: Session, history: ActivationHistory | None = None) -> Replay:
    """The Replay a resumed activation of the session's running turn gets: from the session's
    journal, or from `history` when a test changed what the journal says."""
    turn = session.state.turn
    return Replay(SESSION, LIMITS, history_of(session) if history is None else history,
                  turn.sequence, turn.activation)


def live(session: Session, op: dict[str, Any], outcome: dict[str, Any] | None = None
         ) -> dict[str, Any]:
    """One guest call of the live turn, and for an effect its outcome: the guest's answer."""
    step = session.guest(op["op"], **{k: v for k, v in op.items() if k != "op"})
    answer = guest_answers(step).get(session.calls)
    if answer is None:
        for record in step.records:
            result = outcome if op["op"] == "model.call" else {"content": "r", "is_error": False}
            answer = guest_answers(session.done(record["seq"], result=result)).get(session.calls)
    return answer


def lived(ops: list[tuple[dict[str, Any], dict[str, Any] | None]]
          ) -> tuple[Session, list[dict[str, Any]]]:
    """A running turn whose guest made `ops` live (each with its effect's outcome, if any),
    and the answer each call was given."""
    session = Session().running()
    return session, [live(session, op, outcome) for op, outcome in ops]


OPS = [({"op": "transcript.read"}, None),
       ({"op": "kv.read", "key": "n"}, None),
       ({"op": "kv.put", "key": "n", "value": 1}, None),
       ({"op": "transcript.set", "messages": USER}, None),
       ({"op": "telemetry.record", "name": "t"}, None),
       ({"op": "model.call", "messages": USER}, TOOL_ASK),
       ({"op": "tools.call", "calls": [{"name": "echo", "input": {"x": 1}}]}, None),
       ({"op": "events.emit", "kind": "progress", "data": {"step": 1}}, None),
       ({"op": "model.call", "messages": USER}, ANSWER)]


def test_every_call_is_answered_as_it_was_live_and_the_replay_ends_at_the_journal_s_end():
    session, answers = lived(OPS)
    replay = replay_of(session)
    for (op, _), answer in zip(OPS, answers, strict=True):
        assert not replay.done
        assert replay.answer(op) == answer
    assert replay.done and replay.calls == len(OPS)


@pytest.mark.parametrize("index,changed,differs", [
    (2, {"op": "kv.put", "key": "other", "value": 1}, "key"),
    (3, {"op": "transcript.set", "messages": USER + USER}, "items"),
    (5, {"op": "model.call", "messages": USER + USER}, "context"),
    (6, {"op": "tools.call", "calls": [{"name": "clock", "input": {}}]}, "tool"),
    (7, {"op": "events.emit", "kind": "other", "data": {}}, "name"),
])
def test_the_first_call_that_would_record_something_else_diverges(index, changed, differs):
    replay = replay_of(lived(OPS)[0])
    for op, _ in OPS[:index]:
        replay.answer(op)
    with pytest.raises(Diverged) as caught:
        replay.answer(changed)
    assert caught.value.code == DIVERGED
    assert f"guest call #{index + 1} ({changed['op']})" in caught.value.message
    assert differs in caught.value.message


def test_another_op_where_an_effect_was_is_a_divergence_naming_both():
    replay = replay_of(lived(OPS[:6])[0])
    for op, _ in OPS[:5]:
        replay.answer(op)
    with pytest.raises(Diverged, match="kv_put of key 'late'.*model_call_started"):
        replay.answer({"op": "kv.put", "key": "late", "value": 0})


def test_a_guest_that_returns_early_diverges():
    replay = replay_of(lived(OPS[:4])[0])
    replay.answer(OPS[0][0])
    assert "kv_put of key 'n'" in replay.returned().message


def test_a_call_recording_more_than_the_journal_holds_diverges():
    replay = replay_of(lived([OPS[0], ({"op": "kv.put", "key": "n", "value": 1}, None)])[0])
    replay.answer(OPS[0][0])
    replay.answer({"op": "kv.put", "key": "n", "value": 1})
    assert replay.done


def test_a_failed_outcome_is_answered_as_the_live_guest_was_told():
    session = Session().running()
    step = session.guest("model.call", messages=USER)
    started = step.records[0]["seq"]
    step = session.done(started, Outcome.TIMEOUT, error={"message": "slow"})
    told = guest_answers(step)[session.calls]
    replay = replay_of(session)
    assert replay.answer({"op": "model.call", "messages": USER}) == told
    assert told["error"] == {"code": "model_call_failed", "outcome": "timeout",
                             "message": "slow"}


def test_the_emit_budget_counts_tool_events_in_replay_as_live():
    session = Session().running()  # LIMITS: 200 bytes of Events per turn
    step = session.guest("tools.call", calls=[{"name": "echo", "input": {}}])
    big = {"kind": "big", "data": "x" * 150}
    session.done(step.records[0]["seq"], result={"content": "r", "is_error": False},
                 events=(big,))
    told = guest_answers(session.guest("events.emit", kind="more", data="y" * 60))
    assert told[session.calls]["error"]["code"] == "emit_limit"
    replay = replay_of(session)
    replay.answer({"op": "tools.call", "calls": [{"name": "echo", "input": {}}]})
    assert replay.answer({"op": "events.emit", "kind": "more", "data": "y" * 60}) == \
        told[session.calls]


# --- the real default Agentloop, resumed in a fresh instance ---------------------------------


class CoreHost:
    """Serves a real guest's calls from the session core, as the session actor does: each
    effect gets the next of `outcomes`, or (with `park`) is parked and the turn suspended,
    the guest's call answered SUSPENDED."""

    def __init__(self, session: Session, outcomes: list[dict[str, Any]],
                 park: bool = False) -> None:
        self.session = session
        self.outcomes = outcomes
        self.park = park

    def __call__(self, op: dict[str, Any]) -> dict[str, Any]:
        step = self.session.guest(op["op"], **{k: v for k, v in op.items() if k != "op"})
        answer = guest_answers(step).get(self.session.calls)
        if answer is not None:
            return answer
        started = step.records[-1]["seq"]
        if self.park:
            step = self.session.feed(Parked(SESSION, started))
            assert step.actions == (SuspendActivation(),)
            return SUSPENDED
        call = self.session.calls
        if op["op"] == "tools.call":
            for record in step.records:
                step = self.session.done(record["seq"], result={"content": "r",
                                                                "is_error": False})
        else:
            step = self.session.done(started, result=self.outcomes.pop(0))
        return guest_answers(step)[call]


class DirectBridge:
    """The actor's side of the activation's bridge, in-process: calls served at once."""

    def __init__(self, host: CoreHost) -> None:
        self.host = host
        self.ended: list[ActivationFinished] = []
        self.done = threading.Event()

    def post(self, item: Any) -> None:
        if isinstance(item, PendingGuestCall):
            item.respond(self.host(item.op))
        else:
            self.ended.append(item.event)
            self.done.set()


def run_activation(host: CoreHost, replay: Replay | None, turn: int) -> ActivationFinished:
    runtime = AgentloopRuntime()
    payload = activation_payload(SESSION, turn, "hi", LIMITS)
    bridge = DirectBridge(host)
    start_activation(bridge, lambda call: runtime.activate(DEFAULT_AGENTLOOP, payload, call,
                                                           None), turn, replay=replay)
    assert bridge.done.wait(30), "the activation did not end"
    return bridge.ended[0]


def suspended_default_turn(outcomes: list[dict[str, Any]]) -> tuple[Session, int]:
    """A default-Agentloop turn run live until its first model call, suspended there, and the
    model's outcome committed as an actor given the turn back commits it."""
    session = Session().running()
    turn = session.state.turn.sequence
    ended = run_activation(CoreHost(session, [], park=True), None, turn)
    assert ended.error["code"] == SUSPENDED_CODE and session.state.turn.suspended
    started = session.records[-1]["seq"]
    assert session.records[-1]["kind"] == "model_call_started"
    step = session.command(Outcomes((EffectDone(SESSION, started, Outcome.OK,
                                                result=outcomes.pop(0)),)))
    assert [type(a) for a in step.actions] == [ResumeActivation]
    return session, turn


def test_the_default_agentloop_resumed_in_a_fresh_instance_finishes_the_turn_as_live():
    session, turn = suspended_default_turn([TOOL_ASK])
    replay = replay_of(session)
    ended = run_activation(CoreHost(session, [ANSWER]), replay, turn)
    assert replay.done
    assert ended.error is None and ended.result == {"status": "completed", "output": "hello"}
    # The same turn run live from start to end journals exactly the same records.
    straight = Session().running()
    assert run_activation(CoreHost(straight, [TOOL_ASK, ANSWER]), None, turn).result == \
        ended.result
    assert [without_at(r) for r in session.records] == \
        [without_at(r) for r in straight.records]


def test_the_default_agentloop_against_a_journal_it_did_not_write_diverges():
    session, turn = suspended_default_turn([ANSWER])
    history = history_of(session)
    # What the first activation saved, changed: the fresh instance asks for something else.
    records = list(history.records)
    saved = next(i for i, r in enumerate(records) if r["kind"] == "transcript_changed")
    records[saved] = {**records[saved], "items": [{"role": "user", "content": []}]}
    tampered = ActivationHistory(history.base, tuple(records), history.turn_input)
    replay = replay_of(session, tampered)
    before = len(session.records)
    ended = run_activation(CoreHost(session, []), replay, turn)
    assert ended.error["code"] == DIVERGED
    assert "guest call #2 (transcript.set)" in ended.error["message"]
    assert len(session.records) == before, "a diverged replay commits and sends nothing"


def without_at(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ("at", "deadline")}
