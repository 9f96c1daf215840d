"""The session's tool definitions, and running tool calls (concurrently, each journaled on its
own; results in the calls' order)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brain_guest._host import call as _call


@dataclass
class ToolResult:
    content: Any
    is_error: bool
    outcome: str  # ok, error, cancelled, timeout or unknown


def definitions() -> list[dict[str, Any]]:
    """The session's Tools as the model is shown them: `{name, description, input_schema}`,
    plus `annotations` for an MCP tool (`server.tool`). Pass chosen names to `model.call(...,
    tools=names)` to offer only those."""
    return list(_call({"op": "tools.list"}).get("tools") or [])


def call(calls: list[dict[str, Any]]) -> list[ToolResult]:
    """Run `calls` (`{"id", "name", "input"}`, e.g. a model reply's tool_calls)."""
    request = [{k: c[k] for k in ("id", "name", "input") if k in c} for c in calls]
    results = _call({"op": "tools.call", "calls": request}).get("results") or []
    return [ToolResult(r.get("content"), bool(r.get("is_error")), str(r.get("outcome", "ok")))
            for r in results]


def results_message(calls: list[dict[str, Any]], results: list[ToolResult]) -> dict[str, Any]:
    """The tool message that answers `calls` with `results`, for the transcript."""
    return {"role": "tool", "content": [
        {"type": "tool_result", "tool_call_id": c.get("id"), "content": r.content,
         "is_error": r.is_error} for c, r in zip(calls, results, strict=True)]}
