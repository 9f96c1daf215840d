"""Anthropic Messages API: POST {base_url}/v1/messages with `x-api-key`.

Only format mapping lives here (docs/models.md, "anthropic"); the transport and the outcome
rules are shared with the other network family in remote.py, http.py and wire.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from brain.models.base import (
    OnDelta,
    Request,
    Result,
    blocks_of,
    result,
    text_of,
    tool_result_text,
)
from brain.models.remote import RemoteProvider, StreamState, spec_value
from brain.models.wire import accept, declared_tools, error_member_text, stream_error
from brain.net.sse import SseEvent

DEFAULT_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


class AnthropicProvider(RemoteProvider):
    """`provider = "anthropic"`."""

    default_base_url = "https://api.anthropic.com"
    terminal = "message_stop"

    def __init__(self, name: str, spec: dict[str, Any], environ: Mapping[str, str]) -> None:
        super().__init__(name, spec, environ)
        self.version = spec_value(name, spec, "anthropic_version", DEFAULT_VERSION, str,
                                  "must be a string")
        # `base_url` is the API root; tolerate a root that already ends in /v1.
        self.path = "/messages" if self.endpoint.path.endswith("/v1") else "/v1/messages"

    def build(self, request: Request, key: str | None) -> tuple[str, dict[str, str], dict]:
        options = self.options_for(request)
        messages = request.get("messages") or []
        system_parts = [str(options.pop("system"))] if options.get("system") else []
        system_parts += [text_of(m) for m in messages if m.get("role") == "system"]
        body: dict[str, Any] = {
            **options,
            "model": self.model,
            "max_tokens": options.get("max_tokens", DEFAULT_MAX_TOKENS),
            "messages": to_wire_messages(messages),
            "stream": self.stream,
        }
        if system_parts:
            body["system"] = "\n\n".join(p for p in system_parts if p)
        tools = [
            {"name": name, "description": description, "input_schema": schema}
            for name, description, schema in declared_tools(request)
        ]
        if tools:
            body["tools"] = tools
        headers = {"anthropic-version": self.version, **accept(self.stream)}
        if key:
            headers["x-api-key"] = key
        return self.path, headers, body

    def parse(self, body: Any) -> Result:
        if body.get("type") == "error":
            raise ValueError("error body with a success status")
        content = [_from_wire_block(b) for b in body.get("content") or []]
        return result(
            [b for b in content if b is not None],
            body.get("stop_reason") or "end_turn",
            _usage(body.get("usage") or {}),
        )

    def new_stream(self) -> StreamState:
        return AnthropicStream()

    def error_detail(self, body: Any) -> str:
        error = body.get("error") if isinstance(body, dict) else None
        text = error_member_text(error)
        return text if text is not None else str(error or "")


class AnthropicStream(StreamState):
    """Builds blocks by index from content_block_start/delta/stop; ends at message_stop."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop_reason = "end_turn"
        self.usage: dict[str, Any] = {}

    def feed(self, event: SseEvent, on_delta: OnDelta) -> None:
        data = json.loads(event.data)
        kind = data.get("type") or event.event
        if kind == "message_start":
            self.usage.update((data.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            block = dict(data["content_block"])
            if block.get("type") == "tool_use":
                block["_json"] = []
            self.blocks[data["index"]] = block
            if block.get("type") == "text" and block.get("text"):
                on_delta(block["text"])
        elif kind == "content_block_delta":
            block = self.blocks[data["index"]]
            delta = data["delta"]
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
                if delta["text"]:
                    on_delta(delta["text"])
            elif delta.get("type") == "input_json_delta":
                block["_json"].append(delta.get("partial_json", ""))
        elif kind == "content_block_stop":
            block = self.blocks[data["index"]]
            if block.get("type") == "tool_use":
                joined = "".join(block.pop("_json"))
                if joined.strip():
                    block["input"] = json.loads(joined)
        elif kind == "message_delta":
            stop_reason = (data.get("delta") or {}).get("stop_reason")
            if stop_reason:
                self.stop_reason = stop_reason
            self.usage.update(data.get("usage") or {})
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            error = data.get("error") or {}
            raise stream_error(error.get("message") or error.get("type") or "error event")

    def result(self) -> Result:
        content = [_from_wire_block(self.blocks[i]) for i in sorted(self.blocks)]
        return result([b for b in content if b is not None], self.stop_reason, _usage(self.usage))


def to_wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Contract messages → Messages API turns (docs/models.md has the table).

    Tool messages become user turns of `tool_result` blocks; consecutive turns of one role are
    merged and empty text blocks dropped, since the API refuses both.
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role not in ("user", "assistant", "tool"):
            raise ValueError(f"unknown message role {role!r}")
        content = [b for b in (_to_wire_block(b) for b in blocks_of(message)) if b is not None]
        if not content:
            continue
        wire_role = "assistant" if role == "assistant" else "user"
        if wire and wire[-1]["role"] == wire_role:
            wire[-1]["content"].extend(content)
        else:
            wire.append({"role": wire_role, "content": content})
    return wire


def _to_wire_block(block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block["text"]} if block.get("text") else None
    if kind == "tool_call":
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": block.get("input", {}),
        }
    if kind == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": block["tool_call_id"],
            "content": tool_result_text(block.get("content")),
            "is_error": bool(block.get("is_error", False)),
        }
    return None


def _from_wire_block(block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")} if block.get("text") else None
    if kind == "tool_use":
        return {
            "type": "tool_call",
            "id": block.get("id"),  # missing: Brain assigns one (brain/sessions/tool_call_ids.py)
            "name": block["name"],
            "input": block.get("input", {}),
        }
    return None  # thinking and server-side blocks are not part of the contract


def _usage(usage: dict[str, Any]) -> dict[str, Any]:
    out = {
        "input_tokens": usage.get("input_tokens") or 0,
        "output_tokens": usage.get("output_tokens") or 0,
    }
    for key in USAGE_KEYS[2:]:
        if usage.get(key):
            out[key] = usage[key]
    return out
