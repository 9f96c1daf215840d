"""The loop's own durable state: one JSON value per key, durable when a call returns."""

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
    """Store `value` under `key`; the sequence of the committed record."""
    return int(call({"op": "kv.put", "key": key, "value": value})["sequence"])


def delete(key: str) -> int | None:
    """Remove `key`; the sequence committed, or None when it was missing."""
    return call({"op": "kv.delete", "key": key}).get("sequence")
