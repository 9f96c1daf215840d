"""Shapes more than one route family uses: the Session, its turn and damage, a sequence, content
blocks.

Each route family's own shapes sit beside its responders in brain/web/resources/.
"""

from __future__ import annotations

from brain.config import MESSAGE_ROLES
from brain.web.contract import MAX_SEQUENCE, SESSION_ID_PATTERN, SESSION_STATUSES
from brain.web.schema import Schema, nullable

SEQUENCE = {"type": "integer", "minimum": 1, "maximum": MAX_SEQUENCE}
TIMESTAMP = {"type": "string", "format": "date-time", "description": "RFC 3339, UTC, ms"}
SESSION_ID_STRING = {"type": "string", "pattern": SESSION_ID_PATTERN}

TURN_ERROR = Schema("TurnError", {
    "type": "object",
    "description": "A failed turn's error: the API codes plus model_call_limit, "
    "turn_timeout, cancelled, agentloop_error, emit_limit, interrupted.",
    "required": ["code"],
    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
}, "turn error")

TURN = Schema("Turn", {
    "type": "object",
    "required": ["sequence", "status"],
    "properties": {
        "sequence": SEQUENCE,
        "status": {"type": "string", "enum": ["running", "ended", "failed"]},
        "error": nullable(TURN_ERROR),
    },
}, "turn")

DAMAGE = Schema("Damage", {
    "type": "object",
    "description": "Where a damaged session's journal is refused, in the words of "
    "`brain journal verify`; present only when status is damaged.",
    "required": ["segment", "offset", "sequence", "reason"],
    "properties": {
        "segment": {"type": "string",
                    "description": "The segment file, relative to the data dir."},
        "offset": {"type": "integer", "minimum": 0,
                   "description": "Byte offset of the refused frame (or header) in it."},
        "sequence": nullable({**SEQUENCE,
                              "description": "The record's sequence there, where known."}),
        "reason": {"type": "string",
                   "description": "e.g. payload checksum mismatch, sequence gap."},
    },
}, "damage")

SESSION = Schema("Session", {
    "type": "object",
    "required": ["id", "status", "created_at", "updated_at", "last_sequence", "config"],
    "properties": {
        "id": SESSION_ID_STRING,
        "status": {"type": "string", "enum": list(SESSION_STATUSES)},
        "created_at": nullable(TIMESTAMP),
        "updated_at": nullable(TIMESTAMP),
        "last_sequence": nullable({"type": "integer", "minimum": 0}),
        "config": nullable({
            "type": "object",
            "description": "The resolved creation configuration, as session_created "
            "recorded it; null only for a damaged session.",
        }),
        "turn": nullable(TURN),
        "damage": DAMAGE,
    },
}, "session")

CONTENT_BLOCK = Schema("ContentBlock", {
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"type": "string"}},
}, "content block")

CONTENT = {"oneOf": [{"type": "string"}, {"type": "array", "items": CONTENT_BLOCK}]}

MESSAGE = Schema("Message", {
    "type": "object",
    "required": ["role", "content"],
    "properties": {
        "role": {"type": "string", "enum": list(MESSAGE_ROLES)},
        "content": CONTENT,
    },
}, "message")
