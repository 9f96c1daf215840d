"""`Turn`: the activation payload, as the loop's argument."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Turn:
    """One turn to run: its input (text, or a list of content blocks) and its limits.

    `turn` is the journal sequence of the turn's `turn_started` record."""

    session_id: str
    turn: int
    input: Any
    limits: dict[str, Any] = field(default_factory=dict)
    kind: str = "turn"

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Turn:
        return cls(session_id=str(payload.get("session_id", "")),
                   turn=int(payload.get("turn", 0)), input=payload.get("input"),
                   limits=dict(payload.get("limits") or {}), kind=str(payload.get("kind", "turn")))

    def content(self) -> list[dict[str, Any]]:
        """The input as content blocks: text becomes one text block."""
        if isinstance(self.input, str):
            return [{"type": "text", "text": self.input}]
        return list(self.input or [])

    def user_message(self) -> dict[str, Any]:
        """The input as a user message, ready to append to the transcript."""
        return {"role": "user", "content": self.content()}

    def text(self) -> str:
        """The input's text: the string itself, or its text blocks joined."""
        if isinstance(self.input, str):
            return self.input
        return "".join(b.get("text", "") for b in self.content() if b.get("type") == "text")
