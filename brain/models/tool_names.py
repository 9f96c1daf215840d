"""Tool names as the network providers accept them: `server.tool` travels as `server__tool`.

OpenAI and Anthropic accept only letters, digits, `_` and `-` in a function name, but an MCP
server's tools are named `server.tool` in a session (brain/tools/mcp/). The remote providers
rename such names in the request they send (declared Tools and earlier tool calls alike) and
rename them back in the answer, using the request's own names, so the journal, the Agentloop
and the model executor only ever see `server.tool`. Names without a `.` are left alone.
"""

from __future__ import annotations

from typing import Any

from brain.models.base import Request, Result

SEPARATOR = "__"


def to_wire(request: Request) -> tuple[Request, dict[str, str]]:
    """The request with dotted names renamed, and the way back (wire name → Brain's name).

    The request's message objects may be shared (a cache holds them): renamed ones are copies.
    """
    tools = request.get("tools") or []
    messages = request.get("messages") or []
    names = {tool.get("name") for tool in tools if isinstance(tool, dict)}
    names |= {block.get("name") for block in _call_blocks(messages)}
    wire = {name: name.replace(".", SEPARATOR) for name in names
            if isinstance(name, str) and "." in name}
    if not wire:
        return request, {}
    renamed = {**request}
    if tools:
        renamed["tools"] = [_renamed(tool, wire) for tool in tools]
    if messages:
        renamed["messages"] = [_message_renamed(message, wire) for message in messages]
    return renamed, {value: key for key, value in wire.items()}


def from_wire(result: Result, back: dict[str, str]) -> Result:
    """The answer with wire names of the request's Tools renamed back."""
    if not back:
        return result
    message = result.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return result
    content = [_renamed(block, back) if _is_call(block) else block
               for block in message["content"]]
    return {**result, "message": {**message, "content": content}}


def _call_blocks(messages: list[Any]) -> list[dict[str, Any]]:
    return [block for message in messages if isinstance(message, dict)
            and isinstance(message.get("content"), list)
            for block in message["content"] if _is_call(block)]


def _is_call(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_call"


def _renamed(item: Any, names: dict[str, str]) -> Any:
    if isinstance(item, dict) and item.get("name") in names:
        return {**item, "name": names[item["name"]]}
    return item


def _message_renamed(message: Any, wire: dict[str, str]) -> Any:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    if not any(_is_call(block) and block.get("name") in wire for block in message["content"]):
        return message
    content = [_renamed(block, wire) if _is_call(block) else block
               for block in message["content"]]
    return {**message, "content": content}
