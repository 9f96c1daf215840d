"""Transport details shared by both network families: TLS, URLs, headers, concurrency."""

from __future__ import annotations

import pickle
import ssl
import threading

import pytest

from brain.models import ModelCallError

from .fakes import FakeServer, json_answer
from .helpers import openai_provider, run


def completion(text):
    return {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {},
    }


@pytest.fixture
def tls_server(certificate):
    cert, key = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with FakeServer(tls=context) as server:
        yield server


def test_https_with_a_private_ca(tls_server, certificate):
    tls_server.answer(json_answer(200, completion("secure")))
    provider = openai_provider(tls_server.url, ca_file=str(certificate[0]), stream=False)
    out, _ = run(provider)
    assert out["message"]["content"][0]["text"] == "secure"


def test_https_with_an_unknown_certificate_is_error_and_sends_nothing(tls_server):
    with pytest.raises(ModelCallError) as info:
        run(openai_provider(tls_server.url))
    err = info.value
    assert err.outcome == "error" and "cannot connect" in err.message
    assert tls_server.requests == []


def test_base_url_query_and_extra_headers_are_sent(server):
    server.answer(json_answer(200, completion("ok")))
    provider = openai_provider(server.url, stream=False, headers={"OpenAI-Organization": "org-1"})
    provider.endpoint = type(provider.endpoint).parse("x", server.url + "/v1?api-version=2024")
    run(provider)
    (req,) = server.requests
    assert req.path == "/v1/chat/completions?api-version=2024"
    assert req.headers["openai-organization"] == "org-1"


def test_one_provider_serves_concurrent_calls(server):
    for i in range(6):
        server.answer(json_answer(200, completion(f"answer {i}"), delay=0.1))
    provider = openai_provider(server.url, stream=False)
    texts: list[str] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            out, _ = run(provider)
            texts.append(out["message"]["content"][0]["text"])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert errors == []
    assert sorted(texts) == [f"answer {i}" for i in range(6)]


def test_model_call_error_survives_pickling():
    err = pickle.loads(pickle.dumps(ModelCallError("error", "HTTP 429: slow", status=429)))
    assert (err.outcome, err.message, err.status) == ("error", "HTTP 429: slow", 429)


def test_a_raising_delta_consumer_does_not_change_the_outcome(server):
    from .fakes import openai_chunk, openai_frames, sse_answer

    server.answer(
        sse_answer(
            openai_frames([openai_chunk({"content": "a"}), openai_chunk({"content": "b"}, "stop")])
        )
    )
    calls: list[str] = []

    def broken(text: str) -> None:
        calls.append(text)
        raise RuntimeError("subscriber went away")

    out = openai_provider(server.url).call({"messages": []}, broken, threading.Event())
    assert calls == ["a", "b"]
    assert out["message"]["content"] == [{"type": "text", "text": "ab"}]


def test_cancel_during_a_stalled_tls_handshake(server):
    from .fakes import never_read
    from .helpers import cancel_after

    server.answer(never_read())  # accepts TCP, never answers the TLS hello
    provider = openai_provider(server.url.replace("http:", "https:"), connect_timeout_s=20)
    cancel = cancel_after(0.3)
    with pytest.raises(ModelCallError) as info:
        run(provider, cancel=cancel)
    assert info.value.outcome == "cancelled"
    assert cancel.stopped_within(0.5)


def test_stalled_tls_handshake_past_connect_timeout_is_error(server):
    from .fakes import never_read

    server.answer(never_read())
    provider = openai_provider(server.url.replace("http:", "https:"), connect_timeout_s=0.3)
    with pytest.raises(ModelCallError) as info:
        run(provider)
    assert info.value.outcome == "error"
