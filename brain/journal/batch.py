"""A batch as the writer commits it: its records numbered, timed and checked before any byte.

Apart from the writer (writer.py), whose job is the I/O of a commit (one write, one fdatasync,
the room, rolls), because what makes a list of fields a batch is a rule of its own and needs no
file: every record has a kind, takes the next sequence and the batch's time (fields cannot
choose them), and a `transcript_changed` must apply to the transcript as the records before it
left it. A batch that breaks a rule is refused whole with `InvalidRecord`, before anything is
written.
"""

from __future__ import annotations

from typing import Any

from brain.journal.errors import InvalidRecord
from brain.protocol.records import TRANSCRIPT_CHANGED

RESERVED = ("seq", "kind", "at")


def number_batch(
    records: list[dict[str, Any]], first: int, at: int, length: int
) -> tuple[list[dict[str, Any]], int]:
    """`(committed, length after)`: `records` as committed, numbered from `first` and stamped
    `at`, given the transcript `length` before them."""
    seq = first
    committed: list[dict[str, Any]] = []
    for fields in records:
        kind = fields.get("kind") if isinstance(fields, dict) else None
        if kind.__class__ is not str or not kind:
            raise InvalidRecord("every record needs a non-empty string kind")
        if "seq" in fields or "at" in fields:  # fields cannot choose them
            fields = {k: v for k, v in fields.items() if k not in RESERVED}
        record = {"seq": seq, "kind": kind, "at": at, **fields}
        if kind == TRANSCRIPT_CHANGED:
            length = check_delta(record, length)
        committed.append(record)
        seq += 1
    return committed, length


def length_before(records: list[dict[str, Any]], index: int, length: int) -> int:
    """The transcript length just before records[index], given the length before records[0]."""
    for record in records[:index]:
        if record["kind"] == TRANSCRIPT_CHANGED:
            length = record["length"]
    return length


def check_delta(record: dict[str, Any], length: int) -> int:
    """The transcript length after `record`, a `transcript_changed` that must apply to a
    transcript of `length` items."""
    start, items, new_length = record.get("start"), record.get("items"), record.get("length")
    if (
        not isinstance(start, int)
        or isinstance(start, bool)
        or not 0 <= start <= length
        or not isinstance(items, list)
        or new_length != start + len(items)
    ):
        raise InvalidRecord(
            f"transcript_changed {record['seq']}: delta does not apply to a "
            f"transcript of {length} items"
        )
    return new_length
