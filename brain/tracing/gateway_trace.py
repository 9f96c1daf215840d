"""Trace lines of the web tier's side of each ask: the gateway is an actor lane of its own."""

from __future__ import annotations

import os
from typing import Any

from brain.tracing import writer
from brain.tracing.lines import HOUSEKEEPING, address, describe, message_type


def trace_ask(direction: str, peer: Any, message: Any, session_id: str | None = None) -> None:
    """One line for a message the gateway sends to, or receives from, the actor system."""
    out = writer.tracer()
    if out is None:
        return
    kind = message_type(message)
    if kind in HOUSEKEEPING and not out.everything:
        return
    line = describe(message, {"dir": direction, "kind": "gateway",
                              "actor": f"web-{os.getpid()}", "peer": address(peer), "msg": kind})
    if session_id and "session_id" not in line:
        line["session_id"] = session_id
    out.write(line)
