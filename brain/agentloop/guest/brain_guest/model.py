"""Call the session's model, get its whole reply."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from brain_guest._host import call as _call


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


def call(messages: list[dict[str, Any]], tools: list[str] | None = None,
         options: dict[str, Any] | None = None) -> ModelReply:
    """Ask the model. `tools`: names to offer (None: all the session's tools, []: none)."""
    request: dict[str, Any] = {"op": "model.call", "messages": messages}
    if tools is not None:
        request["tools"] = tools
    if options is not None:
        request["options"] = options
    result = _call(request)
    return ModelReply(result.get("message") or {"role": "assistant", "content": []},
                      result.get("stop_reason"), result.get("usage") or {})
