"""What one trace line says about one message: its type, session, request, sequences, outcome.

Lines name operations by `{session_id, sequence}` and never carry payloads (no transcript text,
no Tool input, no secrets). Field meanings are listed in docs/operations.md, "Reading a trace".
"""

from __future__ import annotations

from typing import Any

EFFECT_MESSAGES = frozenset({"RunModelCall", "RunToolCall", "RunEnvironmentOp", "HostCallOffer",
                             "DeliverWebhook"})
"""Messages that start an effect: each may leave only after its `*_started` record (for a
webhook, its `webhook_delivery_pending`) is durable."""

HOUSEKEEPING = frozenset({"MetricsReport", "WatchMessage", "WakeupMessage(RefillPool)", "ping",
                          "pong"})
"""Periodic or internal traffic, traced only with BRAIN_TRACE_ALL=1."""


def address(addr: Any) -> str:
    """An actor address as text, the same from every side.

    A parent sees a child it just made as `ActorAddr-7-ActorAddr-(T|:44955)` (a local id wrapping
    the real address); the child calls itself `ActorAddr-(T|:44955)`. Keep the real part.
    """
    text = str(addr)
    at = text.rfind("ActorAddr-(")
    return text[at:] if at > 0 else text


def message_type(msg: Any) -> str:
    if isinstance(msg, str):
        return msg if len(msg) <= 24 else "str"
    name = type(msg).__name__
    payload = getattr(msg, "payload", None) if name == "WakeupMessage" else None
    if payload is not None:
        inner = payload[-1] if isinstance(payload, tuple) and payload else payload
        return f"{name}({type(inner).__name__})"
    return name


def describe(msg: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """Add what `msg` concerns to `fields` (a line being built) and return it."""
    get = getattr
    for name in ("request_id", "session_id", "call_id", "mode", "handled"):
        value = get(msg, name, None)
        if value is not None:
            fields[name] = value
    command = get(msg, "command", None)
    if command is not None:
        fields["command"] = type(command).__name__
    started = get(msg, "started", None)
    if isinstance(started, int):
        fields["seqs"] = [started]
        if fields["msg"] in EFFECT_MESSAGES:
            fields["fenced_by"] = started  # the *_started record this message may not precede
    outcome = get(msg, "outcome", None)
    if outcome is not None:
        fields["outcome"] = getattr(outcome, "value", outcome)
    body = get(msg, "body", None)
    if isinstance(body, dict):
        sequence = body.get("sequence")
        if isinstance(sequence, int):
            fields["seqs"] = [sequence]
        status = body.get("status")
        if isinstance(status, str):
            fields["outcome"] = status
    error_code = get(msg, "error_code", None)
    if error_code is not None:
        fields["outcome"] = error_code
    suspended = get(msg, "suspended", None)
    sequence = get(suspended, "sequence", None)
    if isinstance(sequence, int):  # a Released (or its ReleaseMe) that suspends a turn, or
        fields["suspended"] = sequence  # the Delivered that hands the turn back
    return fields


def suspension_note(line: dict[str, Any]) -> str:
    """What a line says of a suspended turn, for `brain trace`: its suspension (the release
    that takes it to the registry), its hand-back to an actor, its resumption by replay."""
    turn = line.get("suspended")
    if turn is None:
        return ""
    if line["msg"] == "Delivered":
        return f" (turn {turn} back from suspension)"
    return f" (turn {turn} suspended)"
