"""The loop's own durable state: one JSON value per key, durable when a call returns.

A change is committed when `put` or `delete` returns, and a turn that fails afterwards (an
exception, `TurnFailed`, the turn deadline, a cancel, a model-call limit) does not undo it: the
next turn reads what the failed one stored. A loop that wants a turn's changes all or nothing
stores them last, once the turn's work has succeeded, or keeps them under one key put once.
"""

from __future__ import annotations

from typing import Any

from brain_guest._host import call


def read(key: str, default: Any = None) -> Any:
    """The value under `key`, or `default` when the key is missing (a stored null is None)."""
    result = call({"op": "kv.read", "key": key})
    return result.get("value") if result.get("found") else default


def contains(key: str) -> bool:
    """Whether `key` holds a value (null included)."""
    return bool(call({"op": "kv.read", "key": key}).get("found"))


def put(key: str, value: Any) -> int:
    """Store `value` under `key`; the sequence of the committed record. It stays even if the
    turn then fails."""
    return int(call({"op": "kv.put", "key": key, "value": value})["sequence"])


def delete(key: str) -> int | None:
    """Remove `key`; the sequence committed, or None when it was missing. It stays removed
    even if the turn then fails."""
    return call({"op": "kv.delete", "key": key}).get("sequence")
