"""The saved conversation: read it, replace it (Brain stores only what changed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brain_guest._host import call


@dataclass
class Transcript:
    messages: list[dict[str, Any]]
    through_sequence: int


def read() -> Transcript:
    """The saved messages and the journal sequence they reflect."""
    result = call({"op": "transcript.read"})
    return Transcript(list(result.get("messages") or []), int(result.get("through_sequence", 0)))


def set(messages: list[dict[str, Any]]) -> int | None:  # noqa: A001 - the op's own name
    """Replace the saved messages; the sequence committed, or None when nothing changed."""
    return call({"op": "transcript.set", "messages": messages}).get("sequence")
