"""Optional actor-message tracing: one JSON line per message to BRAIN_TRACE.

Traces name operations by {session_id, sequence} and never carry payloads, so a trace file holds
no transcript text and no secrets. Every Brain actor derives from `TracedDispatcher`, so every
message is traced in one place: timers, cancellations, exits and releases included.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import fields, is_dataclass
from typing import Any

from thespian.actors import ActorTypeDispatcher

_TRACE_FIELDS = ("request_id", "session_id", "started", "handled", "mode")


def trace_message(actor: str, msg: Any) -> None:
    path = os.environ.get("BRAIN_TRACE")
    if not path:
        return
    line: dict[str, Any] = {"at": time.time(), "pid": os.getpid(), "actor": actor,
                            "message": type(msg).__name__}
    if is_dataclass(msg):
        for f in fields(msg):
            if f.name in _TRACE_FIELDS:
                line[f.name] = getattr(msg, f.name)
        command = getattr(msg, "command", None)
        if command is not None:
            line["command"] = type(command).__name__
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line, default=str) + "\n")


class TracedDispatcher(ActorTypeDispatcher):
    """Thespian's type dispatcher, tracing each message (under `trace_name`) before dispatch."""

    trace_name = "actor"

    def receiveMessage(self, message: Any, sender: Any) -> Any:
        trace_message(self.trace_name, message)
        return super().receiveMessage(message, sender)
