"""`server.tool` names (MCP tools) cross a network provider as `server__tool` and come back
as `server.tool`, against a fake Chat Completions server over real loopback sockets."""

from __future__ import annotations

import json

from brain.models.tool_names import from_wire, to_wire

from .fakes import json_answer
from .helpers import openai_provider, run, user

TOOLS = [{"name": "docs.search", "description": "Search.", "input_schema": {"type": "object"}},
         {"name": "echo", "description": "Echo.", "input_schema": {"type": "object"}}]
EARLIER_CALL = {"role": "assistant", "content": [
    {"type": "tool_call", "id": "c1", "name": "docs.search", "input": {"q": "a"}}]}
EARLIER_RESULT = {"role": "tool", "content": [
    {"type": "tool_result", "tool_call_id": "c1", "content": "found", "is_error": False}]}


def test_dotted_names_travel_renamed_and_come_back(server):
    server.answer(json_answer(200, {
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "tool_calls": [
                {"id": "c2", "type": "function",
                 "function": {"name": "docs__search", "arguments": json.dumps({"q": "b"})}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}}))
    provider = openai_provider(server.url, stream=False)
    request = {"messages": [user("hi"), EARLIER_CALL, EARLIER_RESULT], "tools": TOOLS}
    before = json.dumps(request, sort_keys=True)
    out, _ = run(provider, request)
    assert json.dumps(request, sort_keys=True) == before  # the caller's request is untouched
    [call] = out["message"]["content"]
    assert (call["name"], call["input"]) == ("docs.search", {"q": "b"})
    (sent,) = server.requests
    assert [t["function"]["name"] for t in sent.body["tools"]] == ["docs__search", "echo"]
    assert sent.body["messages"][1]["tool_calls"][0]["function"]["name"] == "docs__search"


def test_requests_without_dotted_names_are_passed_as_they_are() -> None:
    request = {"messages": [user("hi")], "tools": TOOLS[1:]}
    assert to_wire(request) == (request, {})
    result = {"message": {"role": "assistant", "content": [{"type": "text", "text": "x"}]}}
    assert from_wire(result, {}) is result
