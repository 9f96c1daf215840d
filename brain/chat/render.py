"""How the chat writes Events, transcript messages and errors as lines of text."""

from __future__ import annotations

import json
from typing import Any

from brain.client import Event
from brain.protocol.records import (
    MODEL_CALL_STARTED,
    TOOL_CALL_FAILED,
    TOOL_CALL_STARTED,
    TURN_ENDED,
    TURN_STARTED,
)

MAX_SHOWN = 200  # characters of a Tool's input or result shown on one line


def short(value: Any) -> str:
    """A value on one line, cut to MAX_SHOWN characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 1] + "…"


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or the text of its content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict) and block.get("type") in ("tool_call", "tool_use"):
                parts.append(f"[tool {block.get('name')} {short(block.get('input'))}]")
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                parts.append(f"[result {short(block.get('content'))}]")
            else:
                parts.append(short(block))
        return " ".join(parts)
    return short(content)


def transcript_lines(messages: list[dict[str, Any]]) -> list[str]:
    return [f"{m.get('role', '?')}: {message_text(m.get('content'))}" for m in messages]


def event_line(event: Event) -> str:
    """One Event as `#sequence kind detail`, for /events."""
    detail = event_detail(event)
    origin = f" (from {event.origin.kind} #{event.origin.sequence})" if event.origin else ""
    return f"#{event.sequence} {event.kind}{origin}" + (f" {detail}" if detail else "")


def event_detail(event: Event) -> str:
    data = event.data
    if event.origin is not None:  # an extension Event: its kind is its own name
        return short(data)
    if event.kind == TURN_STARTED:
        return short(data.get("input"))
    if event.kind == TURN_ENDED:
        return short(data.get("output"))
    if event.kind.endswith("_failed") and isinstance(data.get("error"), dict):
        return error_text(data["error"])
    if event.kind == TOOL_CALL_STARTED:
        return f"{data.get('tool')} {short(data.get('invocation', {}).get('input'))}"
    if event.kind == MODEL_CALL_STARTED:
        return str(data.get("model", ""))
    return ""


def error_text(error: dict[str, Any]) -> str:
    return f"{error.get('code')}: {error.get('message')}"


def tool_started_line(event: Event) -> str:
    return f"  ⚙ {event_detail(event)}"


def tool_finished_line(event: Event, tool: str) -> str:
    if event.kind == TOOL_CALL_FAILED:
        return f"  ✗ {tool} {error_text(event.data.get('error') or {})}"
    result = event.data.get("result")
    content = result.get("content") if isinstance(result, dict) else result
    failed = isinstance(result, dict) and result.get("is_error")
    return f"  {'✗' if failed else '✓'} {tool} {message_text(content)}"
