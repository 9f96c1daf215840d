"""A turn's life in the session core: start, effect outcomes, cancel and deadline, finish.

A turn starts with `turn_started` and `activation_started` in one batch (or, admitted by a web
worker without an actor, with `turn_started` alone, the activation following when an actor
opens the session) and ends with the
activation's and the turn's terminal records in one batch. In between, every effect the
Agentloop asked for (guest_ops.py) is out at an executor until its EffectDone arrives, or until
Brain stops waiting: when the activation has ended, or when an executor did not confirm a
cancellation within CANCEL_GRACE_SECS. Either way it gets exactly one terminal record, and what
the guest is answered is a function of that record alone (`guest_answer`), so a resumed
activation's replay (replay.py) answers exactly as the live turn did.

A turn whose guest waits on parked effects only is suspended (suspension.py): no activation
runs until its answer is ready, when the guest is resumed in a fresh instance
(`ResumeActivation`); a suspended turn that is being stopped ends without running the guest.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from brain import errors
from brain.effects import Outcome
from brain.journal import fold_all
from brain.protocol.effects import CancelEffect, EffectDone
from brain.protocol.messages import (
    CancelGrace,
    StartTurn,
    TurnDeadline,
)
from brain.protocol.records import MODEL_CALL_ENDED, MODEL_CALL_FAILED
from brain.protocol.targets import Target
from brain.sessions import records, webhooks
from brain.sessions.asked_limits import check_asked, effective_limits, session_ceiling
from brain.sessions.extension_events import EventRefused, check_event, event_size
from brain.sessions.state import (
    ActivationFinished,
    Phase,
    RecordedOutcome,
    Requester,
    ResumeActivation,
    StartActivation,
    StopActivation,
    Turn,
)
from brain.sessions.tool_call_ids import model_result_with_ids
from brain.sessions.tx import Tx
from brain.sessions.views import turn_result

CANCEL_GRACE_SECS = 10.0  # bounded wait for executors to confirm a cancellation
EXECUTOR_OF = {"model_call": Target.MODEL_EXECUTOR, "tool_call": Target.TOOL_EXECUTOR}


def start(tx: Tx, who: Requester, command: StartTurn) -> None:
    sequence = _admit(tx, who, command)
    if sequence is not None:
        begin(tx, sequence, command.input, who if command.mode == "send" else None,
              command.limits)


def admit(tx: Tx, who: Requester, command: StartTurn) -> None:
    """Only the admission of a submit: `turn_started` and the receipt, with no activation.

    A web worker does this holding the journal's lock, with no actor (brain/web/admission.py);
    the session's actor later opens the journal and `begin`s the turn (core._opened).
    """
    _admit(tx, who, command)


def _admit(tx: Tx, who: Requester, command: StartTurn) -> int | None:
    state = tx.state
    projection = state.projection
    if projection.status in ("ending", "ended"):
        tx.reply(who, error=errors.SessionEnded("the session has ended"))
        return None
    if projection.status == "failed":
        tx.reply(who, error=errors.SessionEnded("the session has failed"))
        return None
    if state.turn is not None or projection.status != "idle":
        tx.reply(who, error=errors.SessionBusy("another turn is active"))
        return None
    try:
        asked = check_asked(command.limits, session_ceiling(projection.config, state.limits),
                            "the session's")
    except errors.InvalidRequest as refused:
        tx.reply(who, error=refused)
        return None
    [started] = tx.commit(records.turn_started(command.input, command.mode, asked or None))
    if command.mode == "submit":
        tx.reply(who, body={"session_id": state.session_id, "sequence": started["seq"]})
    return started["seq"]


def begin(tx: Tx, sequence: int, turn_input: Any, requester: Requester | None,
          asked: dict[str, Any] | None = None) -> None:
    """Start the activation of the turn `sequence` (its turn_started is in this step's batch,
    or was admitted earlier): one batch with it, so the two share one fdatasync. `asked`: the
    lower limits its message asked for (recorded on its turn_started)."""
    state = tx.state
    agentloop = state.projection.config["agentloop"]
    [activation] = tx.commit(records.activation_started(agentloop["name"], sequence))
    limits = effective_limits(state.limits, state.projection.config, asked)
    deadline_ms = tx.now_ms + int(limits.max_turn_secs * 1000) if limits.max_turn_secs else None
    tx.set(phase=Phase.RUNNING, release_wanted=False,
           turn=Turn(sequence, activation["seq"], requester, deadline_ms=deadline_ms,
                     limits=limits))
    if limits.max_turn_secs:
        tx.timer(float(limits.max_turn_secs), TurnDeadline(sequence))
    tx.act(StartActivation(sequence, agentloop,
                           activation_payload(state.session_id, sequence, turn_input, limits),
                           deadline_ms))


def activation_payload(session_id: str, turn: int, turn_input: Any, limits: Any
                       ) -> dict[str, Any]:
    """What `brain_activate` is given: the same for a turn's first activation and for its
    resumption (the Agentloop cannot tell them apart)."""
    return {
        "kind": "turn",
        "session_id": session_id,
        "turn": turn,
        "input": turn_input,
        "limits": {
            "max_model_calls": limits.max_model_calls,
            "max_turn_secs": limits.max_turn_secs,
            "max_tool_secs": limits.max_tool_secs,
            "max_emitted_bytes": limits.max_emitted_bytes,
        },
    }


def cancel(tx: Tx, who: Requester) -> None:
    turn = tx.state.turn
    if turn is None:
        tx.reply(who, body={"session_id": tx.state.session_id, "sequence": None})
        return
    [record] = tx.commit(records.cancel_requested(turn.sequence))
    stop(tx, "cancelled")
    tx.reply(who, body={"session_id": tx.state.session_id, "sequence": record["seq"]})


def deadline(tx: Tx, timer: TurnDeadline) -> None:
    if _is_current(tx, timer.turn):
        stop(tx, "timeout")


def stop(tx: Tx, reason: str) -> None:
    """Cancellation, by request or by the wall deadline: forward it, then wait, bounded."""
    turn = tx.state.turn
    if turn is None or turn.stop_reason is not None:
        return
    tx.set(phase=Phase.STOPPING, turn=replace(turn, stop_reason=reason))
    if reason == "cancelled" and not turn.suspended:
        tx.act(StopActivation())  # a guest computing on its own is stopped too
    for started, pending in turn.pending.items():
        tx.send(EXECUTOR_OF[pending.effect], CancelEffect(tx.state.session_id, started))
    tx.timer(CANCEL_GRACE_SECS, CancelGrace(turn.sequence))


def cancel_grace(tx: Tx, timer: CancelGrace) -> None:
    if _is_current(tx, timer.turn):
        for started in list(tx.state.turn.pending):
            unanswered(tx, started, "the executor did not confirm cancellation in time")


def _is_current(tx: Tx, turn: int) -> bool:
    return tx.state.turn is not None and tx.state.turn.sequence == turn


# --- effect outcomes ------------------------------------------------------------------------


def effect_done(tx: Tx, done: EffectDone) -> None:
    """Commit what the effect came to, then let the waiting guest see it."""
    effect = tx.state.turn.pending[done.started].effect
    if effect == "model_call":
        terminal = _model_call_terminal(done)
        tx.commit(terminal)
    else:
        terminal, events = _tool_call_terminal(tx, done)
        tx.commit(terminal, *events)  # the outcome and the Tool's Events, in one durable batch
    _settle(tx, done.started, guest_answer(terminal))


def recorded_outcome(tx: Tx, outcome: RecordedOutcome) -> None:
    """Replay (replay.py): an effect's journaled terminal record and the Tool Events committed
    with it, folded as they are, and the waiting guest answered from them as it was live."""
    batch = outcome.records
    terminal, *events = batch
    tx.set(projection=fold_all(tx.state.projection, batch))
    emitted = tx.state.turn.emitted_bytes
    for event in events:
        emitted += event_size(event["name"], event.get("data"))
    tx.set_turn(emitted_bytes=emitted)
    for refused in terminal.get("events_refused", ()):
        if refused.get("code") == "emit_limit":
            note_refusal(tx, EventRefused("emit_limit", refused.get("message", "")))
    _settle(tx, terminal["started"], guest_answer(terminal))


def guest_answer(terminal: dict[str, Any]) -> dict[str, Any]:
    """What the guest is told of an effect: a function of its terminal record alone."""
    kind = terminal["kind"]
    if kind == MODEL_CALL_ENDED:
        return terminal.get("result") or {}
    if kind == MODEL_CALL_FAILED:
        return {"error": {"code": MODEL_CALL_FAILED, "outcome": terminal["outcome"],
                          "message": (terminal.get("error") or {}).get("message", "")}}
    result = terminal.get("result") or {}
    answer: dict[str, Any] = {"content": result.get("content"),
                              "is_error": bool(result.get("is_error")),
                              "outcome": terminal["outcome"]}
    if terminal.get("events_refused"):
        answer["events_refused"] = terminal["events_refused"]
    return answer


def _model_call_terminal(done: EffectDone) -> dict[str, Any]:
    if done.outcome is Outcome.OK:
        return records.effect_ended("model_call", done.started,
                                    model_result_with_ids(done.result, done.started))
    return records.effect_failed("model_call", done.started, done.outcome,
                                 dict(done.error or {"message": ""}))


def _tool_call_terminal(tx: Tx, done: EffectDone
                        ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The Tool call's terminal record (with the Events it asked for that were refused, so
    the guest's answer can be rebuilt from the journal) and the Events accepted."""
    answered = done.result or {}
    result = {"content": answered.get("content"),
              "is_error": bool(answered.get("is_error")) or done.outcome is not Outcome.OK}
    if done.outcome is Outcome.OK:
        terminal = records.effect_ended("tool_call", done.started, result)
    else:
        terminal = records.effect_failed("tool_call", done.started, done.outcome,
                                         dict(done.error or {"message": ""}), result)
    events, refused = [], []
    for event in done.events:
        try:
            size = check_event(event.get("kind"), event.get("data"),
                               tx.state.turn.emitted_bytes, tx.state.limits.max_emitted_bytes)
        except EventRefused as exc:
            note_refusal(tx, exc)
            refused.append({"kind": event.get("kind"), "code": exc.code, "message": exc.message})
            continue
        tx.set_turn(emitted_bytes=tx.state.turn.emitted_bytes + size)
        events.append(records.extension_event(event["kind"], event.get("data"), "tool",
                                              done.started))
    if refused:
        terminal["events_refused"] = refused
    return terminal, events


def unanswered(tx: Tx, started: int, message: str) -> None:
    """Brain stops waiting for an effect: record `unknown` itself and release the guest."""
    effect = tx.state.turn.pending[started].effect
    [terminal] = tx.commit(records.effect_unanswered(effect, started, message))
    _settle(tx, started, guest_answer(terminal))


def _settle(tx: Tx, started: int, answer: dict[str, Any]) -> None:
    """The effect is over: answer its guest call (a `tools.call` once all its calls are)."""
    turn = tx.state.turn
    pending = dict(turn.pending)
    waiter = pending.pop(started)
    batches = turn.batches
    if waiter.effect == "tool_call":
        batch = batches[waiter.call_id]
        results = {**batch.results, started: answer}
        batches = dict(batches)
        if len(results) == len(batch.order):
            del batches[waiter.call_id]
            answered: dict[str, Any] | None = {"results": [results[s] for s in batch.order]}
        else:
            batches[waiter.call_id] = replace(batch, results=results)
            answered = None
    else:
        answered = answer
    tx.set_turn(pending=pending, batches=batches, parked=turn.parked - {started})
    if answered is not None:
        _answer_guest(tx, waiter.call_id, answered)


def _answer_guest(tx: Tx, call_id: int, answer: dict[str, Any]) -> None:
    """A live guest gets its answer now. A suspended one is resumed, and its replay gives it
    the same answer from the journal; a suspended turn being stopped ends once nothing of it
    is out (its guest would only be stopped)."""
    turn = tx.state.turn
    if not turn.suspended:
        tx.answer(call_id, answer)
    elif turn.stop_reason is None:
        tx.set_turn(suspended=False, parked=frozenset())
        tx.act(ResumeActivation(turn.sequence, turn.activation,
                                tx.state.projection.config["agentloop"]))
    elif not turn.pending:
        _finish(tx, None, turn.stopping_error())


def note_refusal(tx: Tx, refused: EventRefused) -> None:
    """Over the emit budget is a turn error (`emit_limit`), as the model-call limit is: the
    Event is refused now and the turn fails with it, whatever the loop does."""
    turn = tx.state.turn
    if refused.code == "emit_limit" and turn is not None and turn.forced_error is None:
        tx.set_turn(forced_error={"code": "emit_limit", "message": refused.message})


# --- the end of the activation, and of the turn ---------------------------------------------


def activation_finished(tx: Tx, finished: ActivationFinished) -> None:
    if not _is_current(tx, finished.turn) or tx.state.turn.suspended:
        return  # a suspended turn's dropped instance ends with nothing to say
    for started in list(tx.state.turn.pending):
        # The guest stopped while an effect was out: its outcome can no longer be known.
        unanswered(tx, started, "the activation ended first")
    _finish(tx, finished.result, finished.error)


def _finish(tx: Tx, result: dict[str, Any] | None, failure: dict[str, Any] | None) -> None:
    """The activation's and the turn's terminal records, in one batch, and the answer."""
    turn = tx.state.turn
    if failure is not None:
        batch = [records.activation_failed(turn.activation, failure)]
        error = turn.forced_error or failure
    else:
        batch = [records.activation_ended(turn.activation)]
        error = turn.forced_error or _loop_error(result)
    if error is None:
        batch.append(records.turn_ended(turn.sequence, result.get("output")))
    else:
        if not turn.forced_error and turn.stop_reason is not None:
            error = turn.stopping_error()
        batch.append(records.turn_failed(turn.sequence, error))
    terminal = tx.commit(*batch)[-1]
    webhooks.owe_deliveries(tx, [terminal])
    tx.set(phase=Phase.IDLE, turn=None)
    if turn.requester is not None:
        tx.reply(turn.requester, body=turn_result(tx.state.session_id, turn.sequence, terminal))
    tx.checkpoint = True


def _loop_error(result: dict[str, Any] | None) -> dict[str, Any] | None:
    if result is None or result.get("status") == "completed":
        return None
    error = result.get("error") if isinstance(result.get("error"), dict) else {}
    return {"code": str(error.get("code", "agentloop_error")),
            "message": str(error.get("message", "the Agentloop reported failure"))}
