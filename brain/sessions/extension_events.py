"""Rules for extension Events: reserved names and the per-turn byte budget.

Extension Events travel the same commit path as every record; these checks decide whether one
may be committed at all. A refused Event commits nothing (docs/concepts.md, "Effects").
"""

from __future__ import annotations

import json
from typing import Any

from brain.errors import BY_CODE
from brain.journal import RECORD_NAMES
from brain.protocol.records import TRANSCRIPT_REPLACED

TURN_ERROR_CODES = frozenset({"model_call_limit", "turn_timeout", "cancelled", "agentloop_error",
                              "agentloop_diverged", "emit_limit", "interrupted"})
RESERVED_NAMES = frozenset(RECORD_NAMES) | {"model_delta", "tool_progress", TRANSCRIPT_REPLACED,
                                          "error"} \
    | frozenset(BY_CODE) | TURN_ERROR_CODES
MAX_NAME_LENGTH = 128


class EventRefused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def event_size(kind: str, data: Any) -> int:
    """Bytes an Event counts against BRAIN_MAX_EMITTED_BYTES: its kind plus serialized data."""
    return len(kind.encode()) + len(json.dumps(data, separators=(",", ":")).encode())


def check_event(kind: Any, data: Any, emitted_so_far: int, budget: int) -> int:
    """The Event's size if it may be committed; raises EventRefused otherwise.

    `budget` 0 means no bound (the zero convention of every deployment limit).
    """
    if not isinstance(kind, str) or not kind or len(kind) > MAX_NAME_LENGTH:
        raise EventRefused("invalid_request",
                           f"event kind must be a non-empty string of at most {MAX_NAME_LENGTH}")
    if kind in RESERVED_NAMES:
        raise EventRefused("invalid_request", f"event kind {kind!r} is reserved by Brain")
    try:
        size = event_size(kind, data)
    except (TypeError, ValueError):
        raise EventRefused("invalid_request", "event data must be JSON") from None
    if budget and emitted_so_far + size > budget:
        raise EventRefused("emit_limit",
                           f"emitting {size} bytes would exceed BRAIN_MAX_EMITTED_BYTES "
                           f"({budget}) for this turn ({emitted_so_far} used)")
    return size

