"""Every journal record the session writes, built in one place (docs/journal.md).

The session core, restart recovery and the tests build records only through these functions, so
a record's shape is decided once: each effect (`model_call`, `tool_call`, `environment_op`,
`activation`) starts with `<effect>_started` and ends with exactly one of `<effect>_ended`
(outcome `ok`) or `<effect>_failed` (any other outcome, with `error: {message, ...}`). A Tool's
terminal record also keeps `result`, what the model was told. Records here have no `seq` and no
`at`: whoever commits them assigns both. Each kind, its fields and whether clients see it are
declared in brain.protocol.records; the builders here write exactly those fields.
"""

from __future__ import annotations

from typing import Any

from brain.effects import Outcome, failure
from brain.protocol import records as kinds
from brain.protocol.records import TOOL_CALL

Record = dict[str, Any]


# --- the session ----------------------------------------------------------------------------


def session_created(config: dict[str, Any], seeded: int) -> Record:
    return {"kind": kinds.SESSION_CREATED, "config": config, "seeded": seeded}


def forked_from(session_id: str, sequence: int) -> Record:
    """The first record of a fork: the session and record whose state it starts from."""
    return {"kind": kinds.FORKED_FROM, "session_id": session_id, "sequence": sequence}


def session_ending() -> Record:
    return {"kind": kinds.SESSION_ENDING}


def session_ended() -> Record:
    return {"kind": kinds.SESSION_ENDED}


def session_failed(code: str, message: str) -> Record:
    return {"kind": kinds.SESSION_FAILED, "error": {"code": code, "message": message}}


# --- transcript and kv ----------------------------------------------------------------------


def transcript_changed(delta: dict[str, Any]) -> Record:
    """`delta` is `{start, items, length}` (brain.sessions.transcript_diff)."""
    return {"kind": kinds.TRANSCRIPT_CHANGED, **delta}


def kv_put(key: str, value: Any) -> Record:
    return {"kind": kinds.KV_PUT, "key": key, "value": value}


def kv_delete(key: str) -> Record:
    return {"kind": kinds.KV_DELETE, "key": key}


def extension_event(name: str, data: Any, origin_kind: str, origin_sequence: int) -> Record:
    """An extension Event; its origin is assigned here, never taken from the payload."""
    return {"kind": kinds.EXTENSION_EVENT, "name": name, "data": data,
            "origin": {"kind": origin_kind, "sequence": origin_sequence}}


# --- turns and activations ------------------------------------------------------------------


def turn_started(input: Any, mode: str, limits: dict[str, Any] | None = None) -> Record:
    """`limits`: the lower limits the message asked for, kept only when it asked."""
    record = {"kind": kinds.TURN_STARTED, "input": input, "mode": mode}
    if limits:
        record["limits"] = limits
    return record


def turn_ended(started: int, output: Any) -> Record:
    return {"kind": kinds.TURN_ENDED, "started": started, "output": output}


def turn_failed(started: int, error: dict[str, Any]) -> Record:
    return {"kind": kinds.TURN_FAILED, "started": started, "error": error}


def cancel_requested(turn: int) -> Record:
    return {"kind": kinds.CANCEL_REQUESTED, "turn": turn}


def activation_started(agentloop: str, turn: int) -> Record:
    return {"kind": kinds.ACTIVATION_STARTED, "agentloop": agentloop, "turn": turn}


def activation_ended(started: int) -> Record:
    return {"kind": kinds.ACTIVATION_ENDED, "started": started}


def activation_failed(started: int, error: dict[str, Any]) -> Record:
    return {"kind": kinds.ACTIVATION_FAILED, "started": started, "error": error}


# --- effects --------------------------------------------------------------------------------


def model_call_started(model: str, message_count: int, context: dict[str, Any],
                       tools: list[str], options: dict[str, Any]) -> Record:
    return {"kind": kinds.MODEL_CALL_STARTED, "model": model, "message_count": message_count,
            "context": context, "tools": tools, "options": options}


def tool_call_started(tool: str, invocation: dict[str, Any], deadline: float | None) -> Record:
    return {"kind": kinds.TOOL_CALL_STARTED, "tool": tool, "invocation": invocation,
            "deadline": deadline}


def environment_op_started(environment: str, op: str, request: dict[str, Any]) -> Record:
    return {"kind": kinds.ENVIRONMENT_OP_STARTED, "environment": environment, "op": op,
            "request": request}


def effect_ended(effect: str, started: int, result: Any) -> Record:
    """The effect `started` answered: outcome `ok`."""
    return {"kind": kinds.ended_kind(effect), "started": started, "result": result,
            "outcome": Outcome.OK.value}


def effect_failed(effect: str, started: int, outcome: Outcome | str, error: dict[str, Any],
                  result: dict[str, Any] | None = None) -> Record:
    """The effect `started` came to a failure outcome. `error` has at least a `message`; a
    Tool's `result` defaults to that message as an error result for the model."""
    record: Record = {"kind": kinds.failed_kind(effect), "started": started, "error": error,
                      "outcome": failure(outcome).value}
    if effect == TOOL_CALL:
        record["result"] = result if result is not None \
            else {"content": error.get("message", ""), "is_error": True}
    return record


def effect_unanswered(effect: str, started: int, message: str) -> Record:
    """Brain stopped waiting for the effect (its activation ended, or an executor did not
    confirm a cancellation): it may have happened, so `unknown`."""
    return effect_failed(effect, started, Outcome.UNKNOWN, {"message": message})


# --- webhook deliveries (private: in the journal, never in Events) -------------------------


def webhook_delivery_pending(delivery_id: str, body: dict[str, Any]) -> Record:
    """A turn is over and its webhook is owed: `body` is what is POSTed, under `delivery_id`
    (the `webhook-id` of every attempt). No URL and no secret: both are configuration."""
    return {"kind": kinds.WEBHOOK_DELIVERY_PENDING, "id": delivery_id, "body": body}


def webhook_delivery_attempted(delivery_id: str, attempt: int, status: int | None,
                               error: str, retry_in_ms: int) -> Record:
    """Attempt `attempt` (1, 2, ...) failed: the receiver's HTTP status (None when it never
    answered) and why; the next attempt follows `retry_in_ms` later."""
    return {"kind": kinds.WEBHOOK_DELIVERY_ATTEMPTED, "id": delivery_id, "attempt": attempt,
            "status": status, "error": error, "retry_in_ms": retry_in_ms}


def webhook_delivery_done(delivery_id: str, attempt: int, status: int) -> Record:
    return {"kind": kinds.WEBHOOK_DELIVERY_DONE, "id": delivery_id, "attempt": attempt,
            "status": status}


def webhook_delivery_abandoned(delivery_id: str, attempts: int, reason: str) -> Record:
    return {"kind": kinds.WEBHOOK_DELIVERY_ABANDONED, "id": delivery_id, "attempts": attempts,
            "reason": reason}

