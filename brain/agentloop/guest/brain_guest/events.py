"""Publish an extension Event on the session's Event stream."""

from __future__ import annotations

from typing import Any

from brain_guest._host import call


def emit(kind: str, data: Any = None) -> int:
    """Emit Event `kind` with `data`; the sequence it was committed at."""
    return int(call({"op": "events.emit", "kind": kind, "data": data})["sequence"])
