"""Call the session's model, get its whole reply."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from brain_guest._host import call_text
from brain_guest.transcript import Messages, Transcript, request_text


@dataclass
class ModelReply:
    message: dict[str, Any]
    stop_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The reply's text blocks, joined."""
        return "".join(block.get("text", "") for block in self.message.get("content", [])
                       if block.get("type") == "text")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The reply's tool_call blocks, in order (empty when the model asked for none)."""
        return [block for block in self.message.get("content", [])
                if block.get("type") == "tool_call"]


def call(messages: Transcript | Messages, tools: list[str] | None = None,
         options: dict[str, Any] | None = None) -> ModelReply:
    """Ask the model with `messages` (a Transcript or a list). `tools`: names to offer (None:
    all the session's tools, []: none)."""
    extra: dict[str, Any] = {}
    if tools is not None:
        extra["tools"] = tools
    if options is not None:
        extra["options"] = options
    result = call_text("model.call", request_text("model.call", messages, extra))
    return ModelReply(result.get("message") or {"role": "assistant", "content": []},
                      result.get("stop_reason"), result.get("usage") or {})
