"""Over a real `brain serve`, with raw sockets: the edges of HTTP a real client or proxy hits.

Chunked bodies are read (and bounded) like Content-Length ones; requests gunicorn's parser
refuses are answered in the contract's error shape, never as HTML; a body that stops arriving
is cut after its time budget; a header that must appear once, sent twice, and a Content-Type
that names no media type are refused.
"""

from __future__ import annotations

import json
import select
import time
from collections.abc import Iterator

import pytest

from brain.web.bodies import SMALL_BODY_LIMIT
from tests.support.raw_http import chunked, connect, exchange, read_answer
from tests.support.server import BrainServer

BODY_BUDGET_SECS = 5.0  # gunicorn's `keepalive` in brain/web/gunicorn_conf.py
MARGIN_SECS = 3.0  # a loaded CI machine's scheduling, beyond the body budget


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    s = BrainServer(tmp_path_factory.mktemp("edges") / "data").start()
    try:
        yield s
    finally:
        s.kill()


def head(server: BrainServer, method: str, path: str, *extra: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{server.port}",
             f"Authorization: Bearer {server.token}", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# -- chunked bodies ----------------------------------------------------------------------------

def test_a_chunked_create_body_is_read(server: BrainServer) -> None:
    body = json.dumps({"model": "no-such-model"}).encode()
    answer = exchange(server.port, head(server, "POST", "/v1/sessions",
                                        "Content-Type: application/json",
                                        "Transfer-Encoding: chunked") + chunked(body))
    assert answer.status == 400, answer
    error = answer.error()
    assert error["code"] == "invalid_request" and "no-such-model" in error["message"], error

    body = json.dumps({"metadata": {"sent": "in chunks"}}).encode()
    answer = exchange(server.port, head(server, "POST", "/v1/sessions",
                                        "Transfer-Encoding: chunked") + chunked(body))
    assert answer.status == 201, answer
    assert answer.json()["config"]["metadata"] == {"sent": "in chunks"}


def test_a_chunked_body_over_the_limit_is_413_and_the_connection_stays_usable(
        server: BrainServer) -> None:
    sid = server.create_session()["id"]
    body = chunked(b" " * (SMALL_BODY_LIMIT + 1), piece=4096)
    last_chunk = b"0\r\n\r\n"
    with connect(server.port) as sock:
        sock.sendall(head(server, "POST", f"/v1/sessions/{sid}/cancel",
                          "Transfer-Encoding: chunked") + body[:-len(last_chunk)])
        answer = read_answer(sock)
        assert answer.status == 413, answer
        assert answer.error()["code"] == "payload_too_large"
        # The rest of the body is read and dropped, and the connection serves on.
        sock.sendall(last_chunk + f"GET /healthz HTTP/1.1\r\nHost: {server.port}\r\n\r\n"
                     .encode())
        assert read_answer(sock).status == 200


def test_a_malformed_chunk_is_400(server: BrainServer) -> None:
    answer = exchange(server.port, head(server, "POST", "/v1/sessions",
                                        "Transfer-Encoding: chunked") + b"zz\r\n{}\r\n0\r\n\r\n")
    assert answer.status == 400, answer
    assert answer.error()["code"] == "invalid_request"
    assert answer.closed


# -- requests gunicorn's parser refuses ---------------------------------------------------------

HOST = b"Host: 127.0.0.1\r\n"
PARSER_REFUSALS = {
    "header over 8190 bytes": (b"GET /healthz HTTP/1.1\r\n" + HOST + b"X-Big: "
                               + b"a" * 9000 + b"\r\n\r\n", 431),
    "request line over 4094 bytes": (b"GET /healthz?" + b"a" * 5000 + b" HTTP/1.1\r\n"
                                     + HOST + b"\r\n", 414),
    "NUL in a header value": (b"GET /healthz HTTP/1.1\r\n" + HOST + b"X-A: a\x00b\r\n\r\n", 400),
    "NUL in the path": (b"GET /heal\x00thz HTTP/1.1\r\n" + HOST + b"\r\n", 400),
    "raw non-ASCII byte in the path": (b"GET /heal\xffthz HTTP/1.1\r\n" + HOST + b"\r\n", 400),
    "raw non-ASCII byte in a header name": (b"GET /healthz HTTP/1.1\r\n" + HOST
                                            + b"X-\xe9: a\r\n\r\n", 400),
    "Content-Length with Transfer-Encoding": (b"POST /v1/sessions HTTP/1.1\r\n" + HOST
                                              + b"Content-Length: 2\r\n"
                                              b"Transfer-Encoding: chunked\r\n\r\n"
                                              b"2\r\n{}\r\n0\r\n\r\n", 400),
    "invalid Content-Length": (b"POST /v1/sessions HTTP/1.1\r\n" + HOST
                               + b"Content-Length: abc\r\n\r\n{}", 400),
    "two different Content-Lengths": (b"POST /v1/sessions HTTP/1.1\r\n" + HOST
                                      + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
                                      400),
    "bad HTTP version": (b"GET /healthz HTTP/9.9\r\n" + HOST + b"\r\n", 400),
    "bad method": (b"G(T /healthz HTTP/1.1\r\n" + HOST + b"\r\n", 400),
    "space in a header name": (b"GET /healthz HTTP/1.1\r\n" + HOST + b"X A: b\r\n\r\n", 400),
    "obsolete line folding": (b"GET /healthz HTTP/1.1\r\n" + HOST
                              + b"X-A: a\r\n b\r\n\r\n", 400),
    "unsupported transfer coding": (b"POST /v1/sessions HTTP/1.1\r\n" + HOST
                                    + b"Transfer-Encoding: gzip\r\n\r\n", 400),
    "more than 100 header fields": (b"GET /healthz HTTP/1.1\r\n" + HOST
                                    + b"".join(b"X-%d: a\r\n" % i for i in range(101))
                                    + b"\r\n", 431),
    "Expect other than 100-continue": (b"POST /v1/sessions HTTP/1.1\r\n" + HOST
                                       + b"Expect: 200-ok\r\nContent-Length: 2\r\n\r\n{}",
                                       417),
    "control character in a header value": (b"GET /healthz HTTP/1.1\r\n" + HOST
                                            + b"X-A: a\x07b\r\n\r\n", 400),
    "garbage request line": (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", 400),
}


@pytest.mark.parametrize("kind", sorted(PARSER_REFUSALS))
def test_a_request_the_parser_refuses_is_answered_in_the_error_shape(
        server: BrainServer, kind: str) -> None:
    request, status = PARSER_REFUSALS[kind]
    answer = exchange(server.port, request)
    assert answer.status == status, (kind, answer)
    error = answer.error()
    assert error["code"] == "invalid_request", (kind, error)
    assert b"<html" not in answer.body
    assert answer.closed, kind


# -- a body that stops arriving -------------------------------------------------------------------

def test_a_body_that_stops_arriving_is_cut_after_its_budget(server: BrainServer) -> None:
    with connect(server.port, timeout=BODY_BUDGET_SECS + 30) as sock:
        started = time.monotonic()
        sock.sendall(head(server, "POST", "/v1/sessions", "Content-Type: application/json",
                          "Content-Length: 100") + b'{"metadata')
        answer = read_answer(sock, timeout=BODY_BUDGET_SECS + 30, started=started)
    assert answer.status == 408, answer
    assert answer.error()["code"] == "request_timeout"
    assert answer.closed
    assert BODY_BUDGET_SECS - 0.5 <= answer.elapsed <= BODY_BUDGET_SECS + MARGIN_SECS, answer


def test_a_body_trickling_under_the_budget_per_read_is_still_cut(server: BrainServer) -> None:
    """The budget is for the whole body, not for each read: a byte a second never ends it."""
    with connect(server.port, timeout=BODY_BUDGET_SECS + 30) as sock:
        started = time.monotonic()
        sock.sendall(head(server, "POST", "/v1/sessions", "Content-Length: 100"))
        give_up = started + BODY_BUDGET_SECS + MARGIN_SECS
        while time.monotonic() < give_up:  # a byte every 0.3 s until the server answers
            if select.select([sock], [], [], 0.3)[0]:
                break
            sock.sendall(b" ")
        answer = read_answer(sock, timeout=MARGIN_SECS + 10, started=started)
    assert answer.status == 408, answer
    assert answer.elapsed <= BODY_BUDGET_SECS + MARGIN_SECS, answer


def test_a_whole_body_after_a_pause_inside_the_budget_is_served(server: BrainServer) -> None:
    with connect(server.port) as sock:
        sock.sendall(head(server, "POST", "/v1/sessions", "Content-Length: 2"))
        time.sleep(1.0)
        sock.sendall(b"{}")
        answer = read_answer(sock)
    assert answer.status == 201, answer


# -- headers the app could not tell apart --------------------------------------------------------

def test_two_idempotency_keys_are_refused_naming_the_header(server: BrainServer) -> None:
    answer = exchange(server.port, head(server, "POST", "/v1/sessions", "Idempotency-Key: a1",
                                        "Idempotency-Key: a2", "Content-Length: 2") + b"{}")
    assert answer.status == 400, answer
    error = answer.error()
    assert error["code"] == "invalid_request" and "Idempotency-Key" in error["message"], error


def test_one_idempotency_key_with_a_comma_is_still_a_key(server: BrainServer) -> None:
    answer = exchange(server.port, head(server, "POST", "/v1/sessions", "Idempotency-Key: a1,a2",
                                        "Content-Length: 2") + b"{}")
    assert answer.status == 201, answer


@pytest.mark.parametrize("content_type", [";;;=", "json", "/", "application/", "text/plain"])
def test_a_content_type_that_is_not_json_is_415(server: BrainServer, content_type: str) -> None:
    answer = exchange(server.port, head(server, "POST", "/v1/sessions",
                                        f"Content-Type: {content_type}",
                                        "Content-Length: 2") + b"{}")
    assert answer.status == 415, (content_type, answer)
    assert answer.error()["code"] == "unsupported_media_type"


def test_a_keep_alive_connection_serves_a_body_after_a_long_first_request(
        server: BrainServer) -> None:
    """The body budget runs while the body is read, not while the app works on it: a later
    request on the same connection is not refused for time the first one took."""
    sid = server.create_session()["id"]
    with connect(server.port) as sock:
        body = json.dumps({"input": "hello"}).encode()
        sock.sendall(head(server, "POST", f"/v1/sessions/{sid}/messages",
                          f"Content-Length: {len(body)}") + body)
        assert read_answer(sock).status == 200
        time.sleep(min(BODY_BUDGET_SECS - 1.0, 2.0))
        sock.sendall(head(server, "POST", f"/v1/sessions/{sid}/messages",
                          f"Content-Length: {len(body)}") + body)
        answer = read_answer(sock)
    assert answer.status == 200, answer
