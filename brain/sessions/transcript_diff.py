"""The difference between a saved transcript and a new one, as the journal stores it.

Appends store only the tail; an edit, summary or reorder restarts at the first changed item
(docs/concepts.md, "Transcript and Agentloop state"). The same shape serves a model call's context
delta, so any request can be rebuilt from the saved transcript at `through_sequence`.
"""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]


def first_difference(saved: list[Message], new: list[Message]) -> int | None:
    """Index of the first item that differs, or None when both lists are equal.

    The common prefix is compared as lists first: a list comparison skips items that are the
    same object, and a guest's list usually holds the saved messages themselves (decoded once,
    brain/agentloop/transcript_echo.py), so a long transcript costs a pass of pointer checks."""
    common = min(len(saved), len(new))
    if saved[:common] == new[:common]:
        return None if len(saved) == len(new) else common
    for index in range(common):
        if saved[index] != new[index]:
            return index
    if len(saved) == len(new):
        return None
    return common


def transcript_delta(saved: list[Message], new: list[Message]) -> dict[str, Any] | None:
    """`{start, items, length}` turning `saved` into `new`; None when nothing changed."""
    start = first_difference(saved, new)
    if start is None:
        return None
    return {"start": start, "items": new[start:], "length": len(new)}


def apply_delta(saved: list[Message], delta: dict[str, Any]) -> list[Message]:
    """Inverse of transcript_delta: what a reader folds, and how a request is rebuilt."""
    return list(saved[: delta["start"]]) + list(delta["items"])


def context_delta(saved: list[Message], request: list[Message]) -> dict[str, Any]:
    """A model call's `context.delta`: `{start, items}`, empty items when equal to saved."""
    delta = transcript_delta(saved, request)
    if delta is None:
        return {"start": len(saved), "items": []}
    return {"start": delta["start"], "items": delta["items"]}
