"""The openai provider against a fake Chat Completions server over real loopback sockets."""

from __future__ import annotations

import time

import pytest

from brain.models import ModelCallError, ProviderSpecError, make_provider

from .fakes import (
    BlackHole,
    close_before_answer,
    json_answer,
    never_read,
    openai_chunk,
    openai_frames,
    refused_port,
    reset_while_reading,
    sse_answer,
)
from .helpers import KEY, cancel_after, failure, lookups, openai_provider, run, user

TOOLS = [
    {
        "name": "lookup",
        "description": "Look a word up.",
        "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}},
    }
]


def completion(message, finish="stop", usage=None):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage or {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


def text_stream(*pieces, finish="stop"):
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": p}) for p in pieces]
    chunks.append(openai_chunk({}, finish))
    chunks.append(
        {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
    )
    return openai_frames(chunks)


# -- successful calls ----------------------------------------------------------------------------


def test_non_streaming_request_shape_and_result(server):
    server.answer(json_answer(200, completion({"role": "assistant", "content": "Hello!"})))
    provider = openai_provider(server.url, stream=False, options={"temperature": 0.2})
    request = {"messages": [user("hi")], "tools": TOOLS, "options": {"max_tokens": 50}}
    out, deltas = run(provider, request)

    assert out == {
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}]},
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 7, "output_tokens": 3},
    }
    assert deltas == ["Hello!"]
    (req,) = server.requests
    assert (req.method, req.path) == ("POST", "/v1/chat/completions")
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["content-type"] == "application/json"
    assert req.body == {
        "temperature": 0.2,
        "max_tokens": 50,
        "model": "served-model",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "lookup",
                    "description": "Look a word up.",
                    "parameters": TOOLS[0]["input_schema"],
                },
            }
        ],
        "stream": False,
    }


def test_streaming_text_deltas_arrive_in_order(server):
    server.answer(sse_answer(text_stream("Hel", "lo ", "world"), gap=0.01))
    out, deltas = run(openai_provider(server.url))
    assert deltas == ["Hel", "lo ", "world"]
    assert out["message"]["content"] == [{"type": "text", "text": "Hello world"}]
    assert out["stop_reason"] == "end_turn"
    assert out["usage"] == {"input_tokens": 5, "output_tokens": 2}
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert server.requests[0].headers["accept"] == "text/event-stream"


def test_stream_without_chunked_encoding(server):
    server.answer(sse_answer(text_stream("a", "b"), chunked=False))
    out, deltas = run(openai_provider(server.url))
    assert deltas == ["a", "b"]


def test_streamed_parallel_tool_calls_join_arguments_by_index(server):
    chunks = [
        openai_chunk({"role": "assistant", "content": "Let me look."}),
        openai_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": ""},
                    }
                ]
            }
        ),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"wo'}}]}),
        openai_chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"word":'},
                    }
                ]
            }
        ),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'rd": "cat"}'}}]}),
        openai_chunk({"tool_calls": [{"index": 1, "function": {"arguments": ' "dog"}'}}]}),
        openai_chunk({}, "tool_calls"),
    ]
    server.answer(sse_answer(openai_frames(chunks)))
    out, deltas = run(openai_provider(server.url), {"messages": [user("x")], "tools": TOOLS})
    assert deltas == ["Let me look."]
    assert out["stop_reason"] == "tool_use"
    assert out["message"]["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_call", "id": "call_a", "name": "lookup", "input": {"word": "cat"}},
        {"type": "tool_call", "id": "call_b", "name": "lookup", "input": {"word": "dog"}},
    ]


def test_non_streaming_tool_calls(server):
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"word": "a"}'},
            },
            {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": ""}},
            {"id": "c3", "type": "function", "function": {"name": "lookup", "arguments": "{bad"}},
        ],
    }
    server.answer(json_answer(200, completion(message, "tool_calls")))
    out, deltas = run(openai_provider(server.url, stream=False))
    assert deltas == []
    assert [b["input"] for b in out["message"]["content"]] == [{"word": "a"}, {}, "{bad"]
    assert out["stop_reason"] == "tool_use"


def test_server_answering_json_to_a_stream_request_is_accepted(server):
    server.answer(json_answer(200, completion({"role": "assistant", "content": "plain"}, "length")))
    out, _ = run(openai_provider(server.url))
    assert out["message"]["content"][0]["text"] == "plain"
    assert out["stop_reason"] == "max_tokens"


def test_history_with_tool_calls_and_results_is_mapped(server):
    server.answer(json_answer(200, completion({"role": "assistant", "content": "ok"})))
    messages = [
        user("look up cat and dog"),
        *lookups("Looking.", "c1", "c2"),
        {
            "role": "assistant",
            "content": [{"type": "tool_call", "id": "c3", "name": "lookup", "input": {}}],
        },
    ]
    request = {"messages": messages, "tools": [], "options": {"system": "Be brief."}}
    run(openai_provider(server.url, stream=False), request)
    assert server.requests[0].body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "look up cat and dog"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"word": "cat"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"word": "dog"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a pet"},
        {"role": "tool", "tool_call_id": "c2", "content": '[error] {"code":7}'},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c3", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            ],
        },
    ]
    assert "tools" not in server.requests[0].body


def test_no_api_key_env_sends_no_authorization(server):
    server.answer(json_answer(200, completion({"role": "assistant", "content": "x"})))
    provider = openai_provider(server.url, environ={}, api_key_env=None, stream=False)
    run(provider)
    assert "authorization" not in server.requests[0].headers


# -- failures that are `error`: the call certainly did not run ----------------------------------


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            429,
            {"error": {"message": "Rate limit reached", "type": "requests"}},
            "HTTP 429: Rate limit reached",
        ),
        (
            500,
            {"error": {"message": "The server had an error"}},
            "HTTP 500: The server had an error",
        ),
        (400, {"detail": "bad\nrequest"}, "HTTP 400: bad request"),
    ],
)
def test_http_error_statuses_are_error_with_status(server, status, body, expected):
    server.answer(json_answer(status, body))
    err = failure(openai_provider(server.url))
    assert (err.outcome, err.status, err.message) == ("error", status, expected)


def test_http_error_with_non_json_body(server):
    server.answer(json_answer(502, None, raw=b"<html>bad gateway</html>"))
    err = failure(openai_provider(server.url))
    assert (err.outcome, err.status, err.message) == (
        "error",
        502,
        "HTTP 502: <html>bad gateway</html>",
    )


def test_refused_port_is_error():
    provider = openai_provider(f"http://127.0.0.1:{refused_port()}")
    err = failure(provider)
    assert err.outcome == "error" and err.status is None
    assert "cannot connect" in err.message


def test_connect_timeout_is_error():
    hole = BlackHole()
    try:
        provider = openai_provider(f"http://127.0.0.1:{hole.port}", connect_timeout_s=0.3)
        started = time.monotonic()
        err = failure(provider)
        assert time.monotonic() - started < 2
    finally:
        hole.close()
    assert err.outcome == "error"


def test_connection_reset_while_writing_the_request_is_error(server):
    server.answer(reset_while_reading())
    big = user("x" * (32 << 20))
    err = failure(openai_provider(server.url), {"messages": [big]})
    assert err.outcome == "error"
    assert "request not sent" in err.message


def test_missing_key_variable_is_error_and_sends_nothing(server):
    provider = openai_provider(server.url, api_key_env="NOT_SET_ANYWHERE")
    err = failure(provider)
    assert err.outcome == "error" and "NOT_SET_ANYWHERE" in err.message
    assert server.requests == []


def test_error_event_inside_a_stream_is_error(server):
    frames = text_stream("partial")[:2] + ['data: {"error": {"message": "overloaded"}}\n\n']
    server.answer(sse_answer(frames))
    err = failure(openai_provider(server.url))
    assert (err.outcome, err.message) == ("error", "stream error: overloaded")


# -- failures that are `unknown`: the model may have run ----------------------------------------


@pytest.mark.parametrize("reset", [False, True])
def test_close_after_request_without_status_is_unknown(server, reset):
    server.answer(close_before_answer(reset=reset))
    err = failure(openai_provider(server.url))
    assert err.outcome == "unknown"
    assert len(server.requests) == 1


@pytest.mark.parametrize("chunked", [True, False])
def test_stream_cut_before_done_is_unknown_after_live_deltas(server, chunked):
    frames = text_stream("one ", "two ", "three")[:3]  # role chunk, "one ", "two "
    server.answer(sse_answer(frames, chunked=chunked, cut=True))
    deltas: list[str] = []
    import threading

    with pytest.raises(ModelCallError) as info:
        openai_provider(server.url).call(
            {"messages": [user("x")]}, deltas.append, threading.Event()
        )
    assert info.value.outcome == "unknown"
    assert deltas == ["one ", "two "]


def test_stream_ending_cleanly_without_done_is_unknown(server):
    server.answer(sse_answer(text_stream("a", "b")[:-1]))
    err = failure(openai_provider(server.url))
    assert err.outcome == "unknown" and "[DONE]" in err.message


def test_truncated_json_body_is_unknown(server):
    def short_body(wire):
        wire.head(200, {"Content-Type": "application/json", "Content-Length": "500"})
        wire.body(b'{"choices": [')
        wire.sock.close()

    server.answer(short_body)
    err = failure(openai_provider(server.url, stream=False))
    assert err.outcome == "unknown"


def test_unreadable_success_body_is_unknown(server):
    server.answer(json_answer(200, None, raw=b"not json"))
    err = failure(openai_provider(server.url, stream=False))
    assert err.outcome == "unknown"


# -- timeouts and cancellation -------------------------------------------------------------------


def test_slow_first_byte_past_the_timeout_is_timeout(server):
    server.answer(json_answer(200, completion({"role": "assistant", "content": "late"}), delay=5))
    provider = openai_provider(server.url, first_byte_timeout_s=0.4)
    started = time.monotonic()
    err = failure(provider)
    elapsed = time.monotonic() - started
    assert err.outcome == "timeout" and "0.4" in err.message
    assert 0.35 < elapsed < 1.5


def test_slow_first_event_after_headers_counts_against_first_byte(server):
    server.answer(sse_answer(text_stream("x"), stall_after=0))
    err = failure(openai_provider(server.url, first_byte_timeout_s=0.4, idle_timeout_s=10))
    assert err.outcome == "timeout" and "no response" in err.message


def test_idle_stream_past_the_timeout_is_timeout(server):
    server.answer(sse_answer(text_stream("a", "b", "c"), stall_after=2))
    started = time.monotonic()
    err = failure(openai_provider(server.url, idle_timeout_s=0.4))
    assert err.outcome == "timeout" and "idle" in err.message
    assert time.monotonic() - started < 1.5


def test_gaps_shorter_than_idle_timeout_are_fine(server):
    server.answer(sse_answer(text_stream("a", "b", "c"), gap=0.2))
    out, _ = run(openai_provider(server.url, idle_timeout_s=0.5))
    assert out["message"]["content"][0]["text"] == "abc"


@pytest.mark.parametrize(
    "answer",
    [
        json_answer(200, {}, delay=10),  # waiting for the first byte
        sse_answer(text_stream("a", "b", "c"), stall_after=2),  # mid-stream
    ],
    ids=["first-byte", "mid-stream"],
)
def test_cancel_stops_the_call_within_half_a_second(server, answer):
    server.answer(answer)
    provider = openai_provider(server.url, first_byte_timeout_s=20, idle_timeout_s=20)
    cancel = cancel_after(0.3)
    err = failure(provider, cancel=cancel)
    assert err.outcome == "cancelled"
    assert cancel.stopped_within(0.5)


def test_cancel_while_connecting():
    hole = BlackHole()
    try:
        provider = openai_provider(f"http://127.0.0.1:{hole.port}", connect_timeout_s=20)
        cancel = cancel_after(0.2)
        err = failure(provider, cancel=cancel)
        assert cancel.stopped_within(0.5)
    finally:
        hole.close()
    assert err.outcome == "cancelled"


# -- configuration -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        {"base_url": "ftp://x/v1", "model": "m"},
        {"base_url": "http://127.0.0.1:99999/v1", "model": "m"},
        {"base_url": "http://127.0.0.1/v1"},
        {"base_url": "http://127.0.0.1/v1", "model": "m", "stream": "yes"},
        {"base_url": "http://127.0.0.1/v1", "model": "m", "idle_timeout_s": 0},
        {"base_url": "http://127.0.0.1/v1", "model": "m", "options": []},
    ],
)
def test_bad_specs_are_refused(spec):
    with pytest.raises(ProviderSpecError):
        make_provider("bad", {"provider": "openai", **spec}, environ={})


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "robot", "content": []}],
        [{"role": "assistant", "content": [{"type": "tool_call", "name": "x"}]}],  # no id
        [{"role": "tool", "content": [{"type": "tool_result", "content": "x"}]}],  # no call id
    ],
)
def test_unmappable_request_is_error_and_sends_nothing(server, messages):
    err = failure(openai_provider(server.url), {"messages": messages})
    assert err.outcome == "error" and "cannot map the request" in err.message
    assert server.requests == []


def test_cancel_while_writing_a_large_request(server):
    server.answer(never_read())
    cancel = cancel_after(0.3)
    err = failure(openai_provider(server.url), {"messages": [user("x" * (32 << 20))]}, cancel)
    assert err.outcome == "cancelled"
    assert cancel.stopped_within(0.5)


def test_request_write_stalled_past_the_idle_timeout_is_error(server):
    server.answer(never_read())
    err = failure(
        openai_provider(server.url, idle_timeout_s=0.3), {"messages": [user("x" * (32 << 20))]}
    )
    assert (err.outcome, err.message) == ("error", "timed out writing the request")
