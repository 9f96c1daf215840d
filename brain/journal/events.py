"""Public Events: which records are public, and the envelope the HTTP API shows for them.

Whether a kind is public is declared with the kind, in brain.protocol.records: the public
records listed in docs/journal.md ("Projections and Events"), plus extension Events (public
under their own `name`) and `transcript_changed` when it replaces existing items (shown as
`transcript_replaced`). Pure appends, kv records and webhook delivery records stay private.
An Event keeps its record's journal sequence.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from brain.protocol.records import (
    ALWAYS_SHOWN,
    EXTENSION_EVENT,
    PRIVATE_RECORDS,
    PUBLIC_RECORDS,
    RECORD_NAMES,
    TRANSCRIPT_CHANGED,
    TRANSCRIPT_REPLACED,
)

__all__ = ["PRIVATE_RECORDS", "PUBLIC_RECORDS", "RECORD_NAMES", "is_public", "rfc3339_ms",
           "to_event", "transcript_length_after"]

_ENVELOPE = ("seq", "kind", "at")


def rfc3339_ms(ms: int) -> str:
    """Integer epoch milliseconds as RFC 3339 UTC with milliseconds: 2026-12-02T13:04:19.123Z.

    The records of one batch share their `at`, so the last answer is kept and reused."""
    global _last_rfc3339
    last = _last_rfc3339
    if last[0] == ms:
        return last[1]
    seconds, millis = divmod(ms, 1000)
    text = f"{_second(seconds)}.{millis:03d}Z"
    _last_rfc3339 = (ms, text)
    return text


_last_rfc3339: tuple[int, str] = (-1, "")


@lru_cache(maxsize=4096)
def _second(seconds: int) -> str:
    return f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%dT%H:%M:%S}"


def transcript_length_after(record: dict[str, Any], length_before: int) -> int:
    """The saved transcript length once `record` is folded (only deltas change it)."""
    if record["kind"] == TRANSCRIPT_CHANGED:
        return record["length"]
    return length_before


def is_public(record: dict[str, Any], transcript_length_before: int) -> bool:
    kind = record["kind"]
    if kind in ALWAYS_SHOWN:
        return True
    return kind == TRANSCRIPT_CHANGED and record["start"] < transcript_length_before


def to_event(
    record: dict[str, Any], transcript_length_before: int, *, owned: bool = False
) -> dict[str, Any] | None:
    """The Event `{sequence, kind, at, data, origin?}` for a record, or None when private.

    `transcript_length_before` is the saved transcript length just before this record: it
    decides whether a `transcript_changed` record replaces items (public) or only appends.
    `owned=True` lets the Event take the record itself as its `data` (the envelope keys are
    removed from it): page reads decode each record only for its Event, so copying it would
    be wasted work.
    """
    kind = record["kind"]
    if kind in PUBLIC_RECORDS:
        if owned:
            seq = record.pop("seq")
            at = record.pop("at")
            del record["kind"]
            data = record
        else:
            seq, at = record["seq"], record["at"]
            data = {k: v for k, v in record.items() if k not in _ENVELOPE}
        return {"sequence": seq, "kind": kind, "at": rfc3339_ms(at), "data": data}
    if kind == EXTENSION_EVENT:
        event = {
            "sequence": record["seq"],
            "kind": record["name"],
            "at": rfc3339_ms(record["at"]),
            "data": record.get("data"),
        }
        if record.get("origin") is not None:
            event["origin"] = record["origin"]
        return event
    if kind == TRANSCRIPT_CHANGED and record["start"] < transcript_length_before:
        return {
            "sequence": record["seq"],
            "kind": TRANSCRIPT_REPLACED,
            "at": rfc3339_ms(record["at"]),
            "data": {
                "start": record["start"],
                "items": record["items"],
                "length": record["length"],
            },
        }
    return None
