"""The byte-level ABI shared by the host and every guest (docs/agentloop.md).

Payloads are UTF-8 JSON; an i64 return value packs `(ptr << 32) | len`. Kept apart from the
runtime so both directions (activation, guest calls) encode and check the same way.
"""

from __future__ import annotations

import json
from typing import Any

from brain.agentloop.memory import MASK32
from brain.journal.transcript_text import json_text


def pack(ptr: int, length: int) -> int:
    """(ptr, len) as the signed i64 wasmtime expects for an i64 result."""
    value = ((ptr & MASK32) << 32) | (length & MASK32)
    return value - (1 << 64) if value >= 1 << 63 else value


def unpack(value: int) -> tuple[int, int]:
    value &= (1 << 64) - 1
    return value >> 32, value & MASK32


def encode(value: Any) -> bytes:
    """Compact UTF-8 JSON. Text with lone surrogates has no UTF-8 form; it goes out escaped."""
    return json_text(value).encode("utf-8")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode(data: bytes) -> Any:
    """Strict JSON from guest bytes: valid UTF-8, no NaN/Infinity. Raises ValueError."""
    return json.loads(data.decode("utf-8"), parse_constant=_no_constant)


def error_result(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def preview(data: bytes, limit: int = 60) -> str:
    """The start of a guest payload, for error messages."""
    text = repr(data[:limit])
    return text + ("..." if len(data) > limit else "")
