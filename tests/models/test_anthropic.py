"""The anthropic provider against a fake Messages API server over real loopback sockets."""

from __future__ import annotations

import pytest

from .fakes import anthropic_frames, close_before_answer, json_answer, sse_answer
from .helpers import KEY, anthropic_provider, cancel_after, failure, lookups, run, user

TOOLS = [{"name": "lookup", "description": "Look a word up.", "input_schema": {"type": "object"}}]


def message(content, stop_reason="end_turn"):
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 12, "output_tokens": 4, "cache_read_input_tokens": 0},
    }


def stream_events(stop=True):
    events = [
        {
            "type": "message_start",
            "message": {**message([], None), "usage": {"input_tokens": 20, "output_tokens": 1}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Checking "},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "both."},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"word": "c'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": 'at"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": {}},
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 30},
        },
    ]
    if stop:
        events.append({"type": "message_stop"})
    return anthropic_frames(events)


def test_non_streaming_request_shape_and_result(server):
    server.answer(
        json_answer(
            200,
            message(
                [
                    {"type": "text", "text": "Sure."},
                    {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {"w": 1}},
                ],
                "tool_use",
            ),
        )
    )
    provider = anthropic_provider(server.url, stream=False, options={"temperature": 0})
    request = {"messages": [user("hi")], "tools": TOOLS, "options": {"system": "Be brief."}}
    out, deltas = run(provider, request)

    assert out == {
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Sure."},
                {"type": "tool_call", "id": "toolu_9", "name": "lookup", "input": {"w": 1}},
            ],
        },
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 12, "output_tokens": 4},
    }
    assert deltas == ["Sure."]
    (req,) = server.requests
    assert (req.method, req.path) == ("POST", "/v1/messages")
    assert req.headers["x-api-key"] == KEY
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    assert req.body == {
        "temperature": 0,
        "model": "claude-test",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "stream": False,
        "system": "Be brief.",
        "tools": TOOLS,
    }


def test_streaming_text_and_tool_use_blocks(server):
    server.answer(sse_answer(stream_events(), gap=0.005))
    out, deltas = run(anthropic_provider(server.url), {"messages": [user("x")], "tools": TOOLS})
    assert deltas == ["Checking ", "both."]
    assert out == {
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_call", "id": "toolu_1", "name": "lookup", "input": {"word": "cat"}},
                {"type": "tool_call", "id": "toolu_2", "name": "lookup", "input": {}},
            ],
        },
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 20, "output_tokens": 30},
    }
    assert server.requests[0].body["stream"] is True


def test_history_maps_tool_calls_and_results_and_merges_user_turns(server):
    server.answer(json_answer(200, message([{"type": "text", "text": "ok"}])))
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "You are terse."}]},
        user("look up cat"),
        *lookups("", "t1", "t2"),  # the empty text block is dropped
        user("and now?"),
    ]
    run(
        anthropic_provider(server.url, stream=False),
        {"messages": messages, "options": {"max_tokens": 99}},
    )
    body = server.requests[0].body
    assert body["system"] == "You are terse."
    assert body["max_tokens"] == 99
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "look up cat"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"word": "cat"}},
                {"type": "tool_use", "id": "t2", "name": "lookup", "input": {"word": "dog"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a pet", "is_error": False},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": '{"code":7}',
                    "is_error": True,
                },
                {"type": "text", "text": "and now?"},
            ],
        },
    ]


def test_base_url_that_already_ends_in_v1(server):
    server.answer(json_answer(200, message([{"type": "text", "text": "ok"}])))
    run(anthropic_provider(server.url + "/v1", stream=False))
    assert server.requests[0].path == "/v1/messages"


@pytest.mark.parametrize(
    ("status", "error_type", "text"),
    [
        (429, "rate_limit_error", "Number of requests has exceeded your rate limit"),
        (529, "overloaded_error", "Overloaded"),
        (500, "api_error", "Internal server error"),
    ],
)
def test_http_errors_are_error_with_status(server, status, error_type, text):
    server.answer(
        json_answer(status, {"type": "error", "error": {"type": error_type, "message": text}})
    )
    err = failure(anthropic_provider(server.url))
    assert (err.outcome, err.status, err.message) == ("error", status, f"HTTP {status}: {text}")


def test_error_event_mid_stream_is_error(server):
    frames = stream_events()[:4] + anthropic_frames(
        [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
    )
    server.answer(sse_answer(frames))
    err = failure(anthropic_provider(server.url))
    assert (err.outcome, err.message) == ("error", "stream error: Overloaded")


@pytest.mark.parametrize("cut", [True, False])
def test_stream_without_message_stop_is_unknown(server, cut):
    frames = stream_events(stop=False)[: 6 if cut else None]
    server.answer(sse_answer(frames, cut=cut))
    err = failure(anthropic_provider(server.url))
    assert err.outcome == "unknown"
    if not cut:
        assert "message_stop" in err.message


def test_close_before_answer_is_unknown(server):
    server.answer(close_before_answer())
    assert failure(anthropic_provider(server.url)).outcome == "unknown"


def test_slow_first_byte_is_timeout(server):
    server.answer(sse_answer(stream_events(), first_delay=5))
    err = failure(anthropic_provider(server.url, first_byte_timeout_s=0.3))
    assert err.outcome == "timeout"


def test_cancel_mid_stream(server):
    server.answer(sse_answer(stream_events(), stall_after=4))
    cancel = cancel_after(0.3)
    err = failure(anthropic_provider(server.url, idle_timeout_s=20), cancel=cancel)
    assert err.outcome == "cancelled"
    assert cancel.stopped_within(0.5)


def test_unparseable_tool_input_in_stream_is_unknown(server):
    frames = anthropic_frames(
        [
            {"type": "message_start", "message": message([], None)},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "lookup", "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"word": '},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_stop"},
        ]
    )
    server.answer(sse_answer(frames))
    err = failure(anthropic_provider(server.url))
    assert (err.outcome, err.message) == ("unknown", "unreadable stream event")


def test_thinking_blocks_are_left_out(server):
    frames = anthropic_frames(
        [
            {"type": "message_start", "message": message([], None)},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hmm"},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "Answer."},
            },
            {"type": "content_block_stop", "index": 1},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 5},
            },
            {"type": "message_stop"},
        ]
    )
    server.answer(sse_answer(frames))
    out, deltas = run(anthropic_provider(server.url))
    assert deltas == ["Answer."]
    assert out["message"]["content"] == [{"type": "text", "text": "Answer."}]
    assert out["stop_reason"] == "end_turn"
