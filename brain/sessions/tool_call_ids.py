"""Ids for tool calls that came without one: assigned by Brain, never empty.

A `tool_result` answers a `tool_call` by its id, and a provider is sent both back in the next
conversation, so an empty or repeated id would pair results with the wrong calls. Some models
(OpenAI-compatible servers among them) answer tool calls without an id, and an Agentloop may
pass `tools.call` a call with none. Brain then assigns one, as the scripted model does, from
the sequence of the record that journals it: `call_<model_call_started seq>_<i>` for the i-th
tool call of a model's answer, `call_<tool_call_started seq>` for a `tools.call` item. A
sequence is unique in a session and the id is part of the record, so a replay of the turn
assigns the same ids and a fork keeps them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["has_id", "model_result_with_ids", "tool_call_id"]


def has_id(value: Any) -> bool:
    """Whether `value` is an id a tool call can keep: a non-empty string."""
    return isinstance(value, str) and value != ""


def model_result_with_ids(result: Any, started: int) -> Any:
    """`result` with an id on every `tool_call` block of its message; the same object when
    every block has one (a model that names its calls costs nothing)."""
    message = result.get("message") if isinstance(result, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list) or all(
            has_id(block.get("id")) for block in content
            if isinstance(block, dict) and block.get("type") == "tool_call"):
        return result
    blocks, index = [], 0
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_call":
            if not has_id(block.get("id")):
                block = {**block, "id": f"call_{started}_{index}"}
            index += 1
        blocks.append(block)
    return {**result, "message": {**message, "content": blocks}}


def tool_call_id(given: Any, seq: int) -> str:
    """The id a `tools.call` item is journaled with: its own, else `call_<seq>` (`seq` is the
    sequence its `tool_call_started` record takes)."""
    return given if has_id(given) else f"call_{seq}"
