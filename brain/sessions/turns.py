"""A turn's life in the session core: start, effect outcomes, cancel and deadline, finish.

A turn starts with `turn_started` and `activation_started` in one batch (or, admitted by a web
worker without an actor, with `turn_started` alone, the activation following when an actor
opens the session) and ends with the
activation's and the turn's terminal records in one batch. In between, every effect the
Agentloop asked for (guest_ops.py) is out at an executor until its EffectDone arrives, or until
Brain stops waiting: when the activation has ended, or when an executor did not confirm a
cancellation within CANCEL_GRACE_SECS. Either way it gets exactly one terminal record.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from brain import errors
from brain.actors.messages import (
    MODEL_EXECUTOR_GLOBAL_NAME,
    TOOL_EXECUTOR_GLOBAL_NAME,
    CancelEffect,
    CancelGrace,
    EffectDone,
    StartTurn,
    TurnDeadline,
)
from brain.effects import Outcome
from brain.sessions import records
from brain.sessions.extension_events import EventRefused, check_event
from brain.sessions.state import (
    ActivationFinished,
    Phase,
    Requester,
    StartActivation,
    StopActivation,
    Turn,
)
from brain.sessions.tx import Tx
from brain.sessions.views import turn_result

CANCEL_GRACE_SECS = 10.0  # bounded wait for executors to confirm a cancellation
EXECUTOR_OF = {"model_call": MODEL_EXECUTOR_GLOBAL_NAME, "tool_call": TOOL_EXECUTOR_GLOBAL_NAME}


def start(tx: Tx, who: Requester, command: StartTurn) -> None:
    sequence = _admit(tx, who, command)
    if sequence is not None:
        begin(tx, sequence, command.input, who if command.mode == "send" else None)


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
    [started] = tx.commit(records.turn_started(command.input, command.mode))
    if command.mode == "submit":
        tx.reply(who, body={"session_id": state.session_id, "sequence": started["seq"]})
    return started["seq"]


def begin(tx: Tx, sequence: int, turn_input: Any, requester: Requester | None) -> None:
    """Start the activation of the turn `sequence` (its turn_started is in this step's batch,
    or was admitted earlier): one batch with it, so the two share one fdatasync."""
    state = tx.state
    agentloop = state.projection.config["agentloop"]
    [activation] = tx.commit(records.activation_started(agentloop["name"], sequence))
    limits = state.limits
    tx.set(phase=Phase.RUNNING, release_wanted=False,
           turn=Turn(sequence, activation["seq"], requester))
    if limits.max_turn_secs:
        tx.timer(float(limits.max_turn_secs), TurnDeadline(sequence))
    tx.act(StartActivation(sequence, agentloop, {
        "kind": "turn",
        "session_id": state.session_id,
        "turn": sequence,
        "input": turn_input,
        "limits": {
            "max_model_calls": limits.max_model_calls,
            "max_turn_secs": limits.max_turn_secs,
            "max_tool_secs": limits.max_tool_secs,
            "max_emitted_bytes": limits.max_emitted_bytes,
        },
    }))


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
    if reason == "cancelled":
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
        _model_call_done(tx, done)
    else:
        _tool_call_done(tx, done)


def _model_call_done(tx: Tx, done: EffectDone) -> None:
    if done.outcome is Outcome.OK:
        tx.commit(records.effect_ended("model_call", done.started, done.result))
        _settle(tx, done.started, done.result or {})
        return
    error = dict(done.error or {"message": ""})
    tx.commit(records.effect_failed("model_call", done.started, done.outcome, error))
    _settle(tx, done.started, {"error": {"code": "model_call_failed",
                                         "outcome": done.outcome.value,
                                         "message": error.get("message", "")}})


def _tool_call_done(tx: Tx, done: EffectDone) -> None:
    answered = done.result or {}
    result = {"content": answered.get("content"),
              "is_error": bool(answered.get("is_error")) or done.outcome is not Outcome.OK}
    if done.outcome is Outcome.OK:
        batch = [records.effect_ended("tool_call", done.started, result)]
    else:
        batch = [records.effect_failed("tool_call", done.started, done.outcome,
                                       dict(done.error or {"message": ""}), result)]
    refused = []
    for event in done.events:
        try:
            size = check_event(event.get("kind"), event.get("data"),
                               tx.state.turn.emitted_bytes, tx.state.limits.max_emitted_bytes)
        except EventRefused as exc:
            note_refusal(tx, exc)
            refused.append({"kind": event.get("kind"), "code": exc.code, "message": exc.message})
            continue
        tx.set_turn(emitted_bytes=tx.state.turn.emitted_bytes + size)
        batch.append(records.extension_event(event["kind"], event.get("data"), "tool",
                                             done.started))
    tx.commit(*batch)  # the outcome and the Tool's Events, in one durable batch
    answer: dict[str, Any] = {**result, "outcome": done.outcome.value}
    if refused:
        answer["events_refused"] = refused
    _settle(tx, done.started, answer)


def unanswered(tx: Tx, started: int, message: str) -> None:
    """Brain stops waiting for an effect: record `unknown` itself and release the guest."""
    effect = tx.state.turn.pending[started].effect
    tx.commit(records.effect_unanswered(effect, started, message))
    if effect == "tool_call":
        answer = {"content": message, "is_error": True, "outcome": Outcome.UNKNOWN.value}
    else:
        answer = {"error": {"code": "model_call_failed", "outcome": Outcome.UNKNOWN.value,
                            "message": message}}
    _settle(tx, started, answer)


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
            tx.answer(waiter.call_id, {"results": [results[s] for s in batch.order]})
        else:
            batches[waiter.call_id] = replace(batch, results=results)
    else:
        tx.answer(waiter.call_id, answer)
    tx.set_turn(pending=pending, batches=batches)


def note_refusal(tx: Tx, refused: EventRefused) -> None:
    """Over the emit budget is a turn error (`emit_limit`), as the model-call limit is: the
    Event is refused now and the turn fails with it, whatever the loop does."""
    turn = tx.state.turn
    if refused.code == "emit_limit" and turn is not None and turn.forced_error is None:
        tx.set_turn(forced_error={"code": "emit_limit", "message": refused.message})


# --- the end of the activation, and of the turn ---------------------------------------------


def activation_finished(tx: Tx, finished: ActivationFinished) -> None:
    if not _is_current(tx, finished.turn):
        return
    for started in list(tx.state.turn.pending):
        # The guest stopped while an effect was out: its outcome can no longer be known.
        unanswered(tx, started, "the activation ended first")
    turn = tx.state.turn
    if finished.error is not None:
        batch = [records.activation_failed(turn.activation, finished.error)]
        error = turn.forced_error or finished.error
    else:
        batch = [records.activation_ended(turn.activation)]
        error = turn.forced_error or _loop_error(finished.result)
    if error is None:
        batch.append(records.turn_ended(turn.sequence, finished.result.get("output")))
    else:
        if not turn.forced_error and turn.stop_reason is not None:
            error = turn.stopping_error()
        batch.append(records.turn_failed(turn.sequence, error))
    terminal = tx.commit(*batch)[-1]
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
