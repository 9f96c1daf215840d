"""OpenAI Chat Completions, as spoken by OpenAI, vLLM, llama.cpp, Ollama and LiteLLM.

Only format mapping lives here (docs/models.md, "openai"); the transport and the outcome rules
are shared with the other network family in remote.py, http.py and wire.py.
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
    tool_result_text,
)
from brain.models.remote import RemoteProvider, StreamState, spec_value
from brain.models.wire import accept, declared_tools, error_member_text, stream_error
from brain.net.sse import SseEvent

FINISH_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}
ERROR_PREFIX = "[error] "


class OpenAIProvider(RemoteProvider):
    """`provider = "openai"`: POST {base_url}/chat/completions with a Bearer key."""

    default_base_url = "https://api.openai.com/v1"
    terminal = "data: [DONE]"

    def __init__(self, name: str, spec: dict[str, Any], environ: Mapping[str, str]) -> None:
        super().__init__(name, spec, environ)
        self.stream_usage = spec_value(name, spec, "stream_usage", True, bool,
                                       "must be true or false")

    def build(self, request: Request, key: str | None) -> tuple[str, dict[str, str], dict]:
        options = self.options_for(request)
        system = options.pop("system", None)
        messages = to_wire_messages(request.get("messages") or [])
        if system:
            messages.insert(0, {"role": "system", "content": str(system)})
        body: dict[str, Any] = {**options, "model": self.model, "messages": messages}
        tools = [
            {
                "type": "function",
                "function": {"name": name, "description": description, "parameters": schema},
            }
            for name, description, schema in declared_tools(request)
        ]
        if tools:
            body["tools"] = tools
        body["stream"] = self.stream
        if self.stream and self.stream_usage:
            body["stream_options"] = {"include_usage": True}
        headers = accept(self.stream)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return "/chat/completions", headers, body

    def parse(self, body: Any) -> Result:
        choice = body["choices"][0]
        message = choice.get("message") or {}
        calls = [
            (tc.get("id"), tc["function"]["name"], tc["function"].get("arguments"))
            for tc in message.get("tool_calls") or []
        ]
        return _result(_content_text(message.get("content")), calls, choice, body.get("usage"))

    def new_stream(self) -> StreamState:
        return OpenAIStream()

    def error_detail(self, body: Any) -> str:
        text = error_member_text(body.get("error") if isinstance(body, dict) else None)
        if text is not None:
            return text
        return str(body.get("message") or body.get("detail") or "")


class OpenAIStream(StreamState):
    """Joins `delta.content` pieces and `delta.tool_calls[i]` fragments by index."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.choice: dict[str, Any] = {}
        self.usage: dict[str, Any] | None = None

    def feed(self, event: SseEvent, on_delta: OnDelta) -> None:
        if event.data.strip() == "[DONE]":
            self.done = True
            return
        chunk = json.loads(event.data)
        if chunk.get("error") and not chunk.get("choices"):
            error = chunk["error"]
            raise stream_error(error.get("message") if isinstance(error, dict) else error)
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.choice = choice
            delta = choice.get("delta") or {}
            piece = delta.get("content")
            if piece:
                self.text.append(piece)
                on_delta(piece)
            for fragment in delta.get("tool_calls") or []:
                self._add_fragment(fragment)

    def _add_fragment(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        if index is None:  # some servers omit it: a new id starts a new call
            ids = [slot["id"] for slot in self.calls.values()]
            new = fragment.get("id") and fragment["id"] not in ids
            index = len(self.calls) if new or not self.calls else max(self.calls)
        slot = self.calls.setdefault(index, {"id": None, "name": "", "arguments": []})
        if fragment.get("id"):
            slot["id"] = fragment["id"]
        function = fragment.get("function") or {}
        if function.get("name") and not slot["name"]:
            slot["name"] = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            slot["arguments"].append(arguments)
        elif arguments is not None:
            slot["arguments"].append(json.dumps(arguments))

    def result(self) -> Result:
        calls = [
            (slot["id"], slot["name"], "".join(slot["arguments"]))
            for _, slot in sorted(self.calls.items())
        ]
        return _result("".join(self.text), calls, self.choice, self.usage)


def to_wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Contract messages → Chat Completions messages (docs/models.md has the table)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        blocks = blocks_of(message)
        texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
        if role == "assistant":
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {
                        "name": b["name"],
                        "arguments": json.dumps(b.get("input", {}), ensure_ascii=False),
                    },
                }
                for b in blocks
                if b.get("type") == "tool_call"
            ]
            out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if calls:
                out["tool_calls"] = calls
            elif out["content"] is None:
                out["content"] = ""
            wire.append(out)
        elif role in ("user", "tool", "system"):
            for b in blocks:
                if b.get("type") == "tool_result":
                    content = tool_result_text(b.get("content"))
                    if b.get("is_error"):
                        content = ERROR_PREFIX + content
                    wire.append(
                        {"role": "tool", "tool_call_id": b["tool_call_id"], "content": content}
                    )
            if texts:
                wire.append(
                    {"role": "system" if role == "system" else "user", "content": "\n".join(texts)}
                )
        else:
            raise ValueError(f"unknown message role {role!r}")
    return wire


def _content_text(content: Any) -> str:
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _result(
    text: str,
    calls: list[tuple[str | None, str, Any]],
    choice: dict[str, Any],
    usage: dict[str, Any] | None,
) -> Result:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for call_id, name, arguments in calls:
        content.append(
            {
                "type": "tool_call",
                "id": call_id or None,  # missing: Brain assigns one (sessions/tool_call_ids.py)
                "name": name,
                "input": _arguments(arguments),
            }
        )
    finish = choice.get("finish_reason")
    stop_reason = FINISH_REASONS.get(finish, finish or "end_turn")
    if calls and stop_reason == "end_turn":
        stop_reason = "tool_use"
    return result(content, stop_reason, _usage(usage))


def _arguments(arguments: Any) -> Any:
    """JSON-string arguments → the input value; unparseable text is kept as the raw string."""
    if not isinstance(arguments, str):
        return arguments if arguments is not None else {}
    if not arguments.strip():
        return {}
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _usage(usage: dict[str, Any] | None) -> dict[str, Any]:
    usage = usage or {}
    out = {
        "input_tokens": usage.get("prompt_tokens", 0) or 0,
        "output_tokens": usage.get("completion_tokens", 0) or 0,
    }
    details = usage.get("prompt_tokens_details") or {}
    if details.get("cached_tokens"):
        out["cache_read_input_tokens"] = details["cached_tokens"]
    return out
