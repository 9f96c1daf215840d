"""The API key never leaves the Authorization/x-api-key header.

Runs calls that fail in many ways (some with servers that echo the key back, as real providers
do in 401 bodies), then greps every exception message, repr, serialised error, traceback, log
record and provider dump for the key.
"""

from __future__ import annotations

import json
import logging
import pickle
import traceback

import pytest

from brain.models import ModelCallError

from .fakes import (
    FakeServer,
    anthropic_frames,
    close_before_answer,
    json_answer,
    openai_chunk,
    openai_frames,
    refused_port,
    sse_answer,
)
from .helpers import KEY, anthropic_provider, cancel_after, openai_provider, run

ECHO = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request"}}


def scenarios():
    stream_echo = openai_frames([openai_chunk({"content": "hi"})], done=False) + [
        f'data: {{"error": {{"message": "bad key {KEY}"}}}}\n\n'
    ]
    anthropic_echo = anthropic_frames(
        [{"type": "error", "error": {"type": "authentication_error", "message": f"key {KEY}"}}]
    )
    return [
        ("openai", json_answer(401, ECHO), {}),
        ("openai", json_answer(429, None, raw=f"slow down {KEY}".encode()), {}),
        ("openai", json_answer(500, {"error": {"message": "boom"}}), {}),
        ("openai", sse_answer(stream_echo), {}),
        (
            "openai",
            sse_answer(openai_frames([openai_chunk({"content": "x"})], done=False), cut=True),
            {},
        ),
        ("openai", close_before_answer(), {}),
        ("openai", json_answer(200, {}, delay=3), {"first_byte_timeout_s": 0.2}),
        ("openai", json_answer(200, {}, delay=3), {"cancel": True}),
        ("anthropic", json_answer(401, {"type": "error", "error": {"message": KEY}}), {}),
        ("anthropic", sse_answer(anthropic_echo), {}),
        ("anthropic", close_before_answer(reset=True), {}),
    ]


def test_key_appears_nowhere_after_many_failures(caplog):
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    outcomes = []
    for family, answer, extra in scenarios():
        cancel = cancel_after(0.2) if extra.pop("cancel", False) else None
        make = openai_provider if family == "openai" else anthropic_provider
        with FakeServer() as server:
            server.answer(answer)
            provider = make(server.url, **extra)
            with pytest.raises(ModelCallError) as info:
                run(provider, cancel=cancel)
            # the key did go where it belongs
            sent = server.requests[0].headers
            assert KEY in (sent.get("authorization", "") + sent.get("x-api-key", ""))
        err = info.value
        outcomes.append(err.outcome)
        fields = {"outcome": err.outcome, "message": err.message, "status": err.status}
        seen += [str(err), repr(err), json.dumps(fields), *traceback.format_exception(err)]
        seen += [repr(provider), repr(vars(provider)), repr(pickle.dumps(provider))]
    provider = openai_provider(f"http://127.0.0.1:{refused_port()}")
    with pytest.raises(ModelCallError) as info:
        run(provider)
    outcomes.append(info.value.outcome)
    seen += [str(info.value), repr(info.value)]
    with FakeServer() as server:  # a key http.client refuses to put in a header
        bad = openai_provider(server.url, environ={"FAKE_KEY": KEY + "\r\nX-Injected: 1"})
        with pytest.raises(ModelCallError) as info:
            run(bad)
        assert server.requests == []
    assert info.value.outcome == "error" and "header value is invalid" in info.value.message
    seen += [str(info.value), repr(info.value), *traceback.format_exception(info.value)]
    seen += [record.getMessage() for record in caplog.records]
    seen.append(caplog.text)

    assert set(outcomes) == {"error", "unknown", "timeout", "cancelled"}
    assert any("[redacted]" in text for text in seen)
    leaks = [text for text in seen if KEY in text]
    assert leaks == []
