"""The Agentloop's guest calls: what each `brain.call` op does to the session (docs/agentloop.md).

A running guest asks for one op at a time: `transcript.read`/`transcript.set`, `kv.read`/
`kv.put`/`kv.delete`, `model.call`, `tools.call`, `events.emit` and `telemetry.record`. Reads
are answered from the projection; writes commit a record first; `model.call` and `tools.call`
journal their `*_started` records and send the effects, and the guest's answer waits for their
outcomes (turns.py). A refused op answers `{"error": {code, message}}` and changes nothing.
"""

from __future__ import annotations

from typing import Any

from brain import errors
from brain.journal.transcript_text import portable
from brain.protocol.effects import RunModelCall, RunToolCall
from brain.protocol.targets import Target
from brain.sessions import records
from brain.sessions.extension_events import EventRefused, check_event
from brain.sessions.state import GuestCall, Pending, Telemetry, ToolBatch
from brain.sessions.tool_call_ids import tool_call_id
from brain.sessions.transcript_diff import context_delta, transcript_delta
from brain.sessions.turns import note_refusal
from brain.sessions.tx import Tx

EFFECT_OPS = frozenset({"model.call", "tools.call"})

Answer = dict[str, Any] | None  # None: the answer waits for effects


def serve(tx: Tx, call: GuestCall) -> None:
    op = call.op.get("op")
    handler = OPS.get(op)
    turn = tx.state.turn
    if turn is None:
        tx.answer(call.call_id, error("internal", "no active turn"))
        return
    if handler is None:
        tx.answer(call.call_id, error("invalid_request", f"unknown op {op!r}"))
        return
    stopping = turn.stopping_error()
    if stopping is not None and op in EFFECT_OPS:
        tx.answer(call.call_id, error(stopping["code"], stopping["message"]))
        return
    try:
        answer = handler(tx, call)
    except errors.BrainError as exc:
        answer = error(exc.code, exc.message)
    if answer is not None:
        tx.answer(call.call_id, answer)


def error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


# --- transcript and kv ----------------------------------------------------------------------


def transcript_read(tx: Tx, call: GuestCall) -> Answer:
    projection = tx.state.projection
    return {"messages": projection.transcript, "through_sequence": projection.last_seq}


def transcript_set(tx: Tx, call: GuestCall) -> Answer:
    delta = transcript_delta(tx.state.projection.transcript, _messages(call.op))
    if delta is None:
        return {"sequence": None}
    [record] = tx.commit(records.transcript_changed(delta))
    return {"sequence": record["seq"]}


def kv_read(tx: Tx, call: GuestCall) -> Answer:
    key, kv = _key(call.op), tx.state.projection.kv
    if key in kv:
        return {"found": True, "value": kv[key]}
    return {"found": False, "value": None}


def tools_list(tx: Tx, call: GuestCall) -> Answer:
    """The session's Tools as the model is shown them (MCP ones with their annotations), so a
    loop can choose which to offer: read from `session_created`, the same on every turn."""
    config = tx.state.projection.config or {}
    listed = []
    for offered, tool in zip(_offered_tools(config, None), config.get("tools", []), strict=True):
        if tool.get("annotations"):
            offered["annotations"] = tool["annotations"]
        listed.append(offered)
    return {"tools": listed}


def kv_put(tx: Tx, call: GuestCall) -> Answer:
    key = _key(call.op)
    if "value" not in call.op:
        raise errors.InvalidRequest("kv.put needs a value")
    [record] = tx.commit(records.kv_put(key, call.op["value"]))
    return {"sequence": record["seq"]}


def kv_delete(tx: Tx, call: GuestCall) -> Answer:
    key = _key(call.op)
    if key not in tx.state.projection.kv:
        return {"sequence": None}
    [record] = tx.commit(records.kv_delete(key))
    return {"sequence": record["seq"]}


# --- effects --------------------------------------------------------------------------------


def model_call(tx: Tx, call: GuestCall) -> Answer:
    state = tx.state
    limit = (state.turn.limits or state.limits).max_model_calls
    if limit and state.turn.model_calls >= limit:
        forced = {"code": "model_call_limit",
                  "message": f"more than {limit} model calls in one turn"}
        tx.set_turn(forced_error=forced)  # the turn fails with it, whatever the loop does
        raise errors.BrainError(forced["message"], code=forced["code"])
    messages = _messages(call.op)
    tools = _offered_tools(state.projection.config, call.op.get("tools"))
    options = call.op.get("options") or {}
    if not isinstance(options, dict):
        raise errors.InvalidRequest("options must be an object")
    projection = state.projection
    model = projection.config["model"]
    context = {"through_sequence": projection.last_seq,
               "delta": context_delta(projection.transcript, messages)}
    [started] = tx.commit(records.model_call_started(
        model["name"], len(messages), context, [tool["name"] for tool in tools], options))
    turn = tx.state.turn
    tx.set_turn(model_calls=turn.model_calls + 1,
                pending={**turn.pending, started["seq"]: Pending("model_call", call.call_id)})
    # Messages whose JSON text the guest just sent travel as that text (transcript_text.py).
    request = {"messages": portable(messages), "tools": tools, "options": options}
    tx.send(Target.MODEL_EXECUTOR,
            RunModelCall(state.session_id, started["seq"], model, request))
    return None


def tools_call(tx: Tx, call: GuestCall) -> Answer:
    calls = call.op.get("calls")
    if not isinstance(calls, list) or not calls:
        raise errors.InvalidRequest("calls must be a non-empty list")
    config = tx.state.projection.config
    configured = {tool["name"]: tool for tool in config.get("tools", [])}
    invocations = []
    first_seq = tx.state.projection.last_seq + 1  # the sequences their records will take
    for index, item in enumerate(calls):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise errors.InvalidRequest(f"calls[{index}]: needs a name")
        if item["name"] not in configured:
            raise errors.InvalidRequest(
                f"calls[{index}]: tool {item['name']!r} is not configured for this session")
        invocations.append((configured[item["name"]],
                            {"id": tool_call_id(item.get("id"), first_seq + index),
                             "input": item.get("input", {})}))
    max_secs = tx.state.limits.max_tool_secs
    deadline = tx.now_ms / 1000.0 + max_secs if max_secs else None
    # Every call its own record, all durable in one batch before any is sent.
    started = tx.commit(*(records.tool_call_started(tool["name"], invocation, deadline)
                          for tool, invocation in invocations))
    order = tuple(record["seq"] for record in started)
    turn = tx.state.turn
    tx.set_turn(pending={**turn.pending,
                         **{seq: Pending("tool_call", call.call_id) for seq in order}},
                batches={**turn.batches, call.call_id: ToolBatch(order)})
    environments = config.get("environments", [])
    for seq, (tool, invocation) in zip(order, invocations, strict=True):
        tx.send(Target.TOOL_EXECUTOR,
                RunToolCall(tx.state.session_id, seq, tool, invocation, deadline, environments))
    return None


# --- Events and telemetry -------------------------------------------------------------------


def events_emit(tx: Tx, call: GuestCall) -> Answer:
    kind, data = call.op.get("kind"), call.op.get("data")
    turn = tx.state.turn
    try:
        size = check_event(kind, data, turn.emitted_bytes, tx.state.limits.max_emitted_bytes)
    except EventRefused as exc:
        note_refusal(tx, exc)
        return error(exc.code, exc.message)
    tx.set_turn(emitted_bytes=turn.emitted_bytes + size)
    [record] = tx.commit(records.extension_event(kind, data, "agentloop", turn.activation))
    return {"sequence": record["seq"]}


def telemetry_record(tx: Tx, call: GuestCall) -> Answer:
    name = call.op.get("name")
    if not isinstance(name, str) or not name:
        raise errors.InvalidRequest("telemetry.record needs a name")
    tx.act(Telemetry({"session_id": tx.state.session_id, "turn": tx.state.turn.sequence,
                      "name": name, "value": call.op.get("value"),
                      "attributes": call.op.get("attributes"), "at": tx.now_ms / 1000.0}))
    return {}


OPS = {
    "transcript.read": transcript_read,
    "transcript.set": transcript_set,
    "kv.read": kv_read,
    "kv.put": kv_put,
    "kv.delete": kv_delete,
    "model.call": model_call,
    "tools.call": tools_call,
    "tools.list": tools_list,
    "events.emit": events_emit,
    "telemetry.record": telemetry_record,
}

LOCAL_OPS = frozenset(OPS) - EFFECT_OPS - {"telemetry.record"}
"""Ops whose Step is at most records and the call's answer (they read the session or commit a
record): the Agentloop's thread may carry them out itself (brain/sessions/carry_out.py,
`Mode.INLINE`). Every other op sends, acts or waits, which only the actor's thread does."""


# --- arguments ------------------------------------------------------------------------------


def _offered_tools(config: dict[str, Any], requested: Any) -> list[dict[str, Any]]:
    configured = {tool["name"]: tool for tool in config.get("tools", [])}
    if requested is None:
        names = list(configured)
    elif isinstance(requested, list) and all(isinstance(n, str) for n in requested):
        names = requested
    else:
        raise errors.InvalidRequest("tools must be a list of configured tool names")
    offered = []
    for name in names:
        tool = configured.get(name)
        if tool is None:
            raise errors.InvalidRequest(f"tool {name!r} is not configured for this session")
        offered.append({"name": name, "description": tool.get("description", ""),
                        "input_schema": tool.get("input_schema", {"type": "object"})})
    return offered


def _messages(op: dict[str, Any]) -> list[dict[str, Any]]:
    messages = op.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise errors.InvalidRequest("messages must be a list of message objects")
    return messages


def _key(op: dict[str, Any]) -> str:
    key = op.get("key")
    if not isinstance(key, str) or not key:
        raise errors.InvalidRequest("key must be a non-empty string")
    return key
