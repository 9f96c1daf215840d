"""What the two network families' wire formats have in common, written once.

openai.py and anthropic.py map the contract to formats that differ in shape but agree on a few
rules: which Tools a request declares and the defaults of their fields, the Accept header that
asks for a stream or for one JSON body, where an error body or a stream's error event keeps its
message, and what such an event becomes. remote.py holds the call itself (the HTTP exchange, the
reading of a JSON body or an SSE stream, the outcome of each failure).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from brain.models.base import ModelCallError, Request


def declared_tools(request: Request) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(name, description, input schema) of each Tool the request declares; a Tool declared
    without a description has an empty one, without a schema an object of any shape."""
    for tool in request.get("tools") or []:
        yield (tool["name"], tool.get("description", ""),
               tool.get("input_schema") or {"type": "object"})


def accept(stream: bool) -> dict[str, str]:
    """The Accept header of a call that asks for a stream of events or for one JSON body."""
    return {"Accept": "text/event-stream" if stream else "application/json"}


def error_member_text(error: Any) -> str | None:
    """The message of an `error` member, an object or a string; None when it is neither."""
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or "")
    if isinstance(error, str):
        return error
    return None


def stream_error(detail: Any) -> ModelCallError:
    """An error event in a stream: the provider refused the call after all (`error`)."""
    return ModelCallError("error", f"stream error: {detail}")
