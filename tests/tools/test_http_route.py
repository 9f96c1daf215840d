"""The http route against a real Tool server on 127.0.0.1: every outcome, and never a retry."""

from __future__ import annotations

import threading
import time

import pytest

from brain.tools import ToolOutcome, run_tool
from tests.tools.toolserver import Conn, Received, ToolServer, refused_url

SESSION = "s-123"


def call(
    url: str,
    value: object = None,
    *,
    deadline: float | None = None,
    cancel: threading.Event | None = None,
    sequence: int = 7,
) -> ToolOutcome:
    tool = {"name": "lookup", "route": "http", "url": url}
    invocation = {"id": "call_1", "input": {"word": "hi"} if value is None else value}
    return run_tool(
        tool,
        invocation,
        session_id=SESSION,
        sequence=sequence,
        deadline=deadline,
        cancel=cancel or threading.Event(),
    )


def assert_failed(result: ToolOutcome, outcome: str) -> None:
    assert result.outcome == outcome, result
    assert result.is_error is True
    assert isinstance(result.content, str) and result.content
    assert result.events == []


def assert_sent_once(server: ToolServer) -> None:
    """Exactly one connection and (when the body was read) one request: Brain never retries."""
    time.sleep(0.1)  # a retry, if there were one, would have connected by now
    assert server.connections == 1
    assert len(server.requests) <= 1


def test_answer_is_ok_and_request_has_the_contract_shape():
    with ToolServer() as server:
        deadline = time.time() + 10
        result = call(server.url, {"word": "hi"}, deadline=deadline)
        assert result == ToolOutcome(content={"got": {"word": "hi"}}, is_error=False, outcome="ok")
        assert_sent_once(server)
        req = server.requests[0]
        assert req.method == "POST" and req.path == "/tool"
        assert req.headers["content-type"] == "application/json"
        assert req.body == {
            "session_id": SESSION,
            "sequence": 7,
            "tool": "lookup",
            "invocation": {"id": "call_1", "input": {"word": "hi"}},
            "deadline": deadline,
        }


def test_no_deadline_is_sent_as_null():
    with ToolServer() as server:
        assert call(server.url).outcome == "ok"
        assert server.requests[0].body["deadline"] is None


def test_server_is_error_passes_through_with_outcome_ok():
    def tool_error(conn: Conn, req: Received) -> None:
        conn.answer_json({"content": "no such word", "is_error": True})

    with ToolServer(tool_error) as server:
        result = call(server.url)
        assert (result.outcome, result.is_error, result.content) == ("ok", True, "no such word")


def test_events_are_returned():
    events = [{"kind": "looked_up", "data": {"word": "hi"}}]

    def with_events(conn: Conn, req: Received) -> None:
        conn.answer_json({"content": "ok", "is_error": False, "events": events})

    with ToolServer(with_events) as server:
        result = call(server.url)
        assert result.outcome == "ok" and result.events == events
        assert result.to_dict() == {
            "content": "ok",
            "is_error": False,
            "outcome": "ok",
            "events": events,
        }


def test_answer_held_open_is_complete_without_eof():
    """A server that keeps the connection open after a complete answer is not waited on."""

    def keep_open(conn: Conn, req: Received) -> None:
        conn.answer(200, b'{"content": 1}', close=False)
        conn.sleep(10)

    with ToolServer(keep_open) as server:
        started = time.monotonic()
        result = call(server.url, deadline=time.time() + 5)
        assert result.outcome == "ok" and result.content == 1
        assert time.monotonic() - started < 1


def test_chunked_answer_held_open():
    def chunked(conn: Conn, req: Received) -> None:
        body = b'{"content": "chunky"}'
        conn.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        conn.send(b"%x\r\n%s\r\n" % (5, body[:5]))
        conn.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body) - 5, body[5:]))
        conn.sleep(10)

    with ToolServer(chunked) as server:
        result = call(server.url, deadline=time.time() + 5)
        assert (result.outcome, result.content) == ("ok", "chunky")


def test_http_500_is_error_with_status():
    def fails(conn: Conn, req: Received) -> None:
        conn.answer(500, b"database on fire")

    with ToolServer(fails) as server:
        result = call(server.url)
        assert_failed(result, "error")
        assert "500" in result.content and "database on fire" in result.content
        assert_sent_once(server)


def test_http_404_is_error():
    with ToolServer(lambda conn, req: conn.answer(404, b"")) as server:
        result = call(server.url)
        assert_failed(result, "error")
        assert "404" in result.content


def test_redirect_is_not_followed():
    def redirect(conn: Conn, req: Received) -> None:
        conn.answer(307, b"", "Location: http://127.0.0.1:1/elsewhere\r\n")

    with ToolServer(redirect) as server:
        result = call(server.url)
        assert_failed(result, "error")
        assert "307" in result.content
        assert_sent_once(server)


def test_connection_dropped_after_request_is_unknown():
    with ToolServer(lambda conn, req: None) as server:  # reads the request, closes (FIN)
        result = call(server.url)
        assert_failed(result, "unknown")
        assert_sent_once(server)
        assert len(server.requests) == 1


def test_connection_reset_after_request_is_unknown():
    with ToolServer(lambda conn, req: conn.reset()) as server:
        result = call(server.url)
        assert_failed(result, "unknown")
        assert_sent_once(server)


def test_truncated_answer_is_unknown():
    def truncated(conn: Conn, req: Received) -> None:
        conn.send(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"content"')

    with ToolServer(truncated) as server:
        assert_failed(call(server.url), "unknown")
        assert_sent_once(server)


def test_truncated_error_answer_is_unknown():
    def truncated(conn: Conn, req: Received) -> None:
        conn.send(b"HTTP/1.1 500 Oops\r\nContent-Length: 100\r\n\r\nhalf")

    with ToolServer(truncated) as server:
        assert_failed(call(server.url), "unknown")


def test_garbage_instead_of_http_is_unknown():
    with ToolServer(lambda conn, req: conn.send(b"hello there\r\n\r\n")) as server:
        assert_failed(call(server.url), "unknown")


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not json</html>",
        b"",
        b"[1, 2]",
        b'{"is_error": false}',
        b'{"content": 1, "is_error": "no"}',
        b'{"content": 1, "events": [{"kind": ""}]}',
        b'{"content": 1, "events": {"kind": "x", "data": 1}}',
        b"\xff\xfe",
    ],
)
def test_malformed_ok_answer_is_unknown(body: bytes):
    with ToolServer(lambda conn, req: conn.answer(200, body)) as server:
        assert_failed(call(server.url), "unknown")
        assert_sent_once(server)


def test_connect_refused_is_error():
    result = call(refused_url())
    assert_failed(result, "error")
    assert "cannot connect" in result.content


def test_failure_while_writing_the_request_is_error():
    """The server closes before reading a large body: the request never fully arrived."""

    def close_early(conn: Conn, req: Received) -> None:
        conn.reset()

    with ToolServer(close_early, read_body=False) as server:
        result = call(server.url, {"blob": "x" * (32 << 20)}, deadline=time.time() + 20)
        assert_failed(result, "error")
        assert "before the request was sent" in result.content
        assert_sent_once(server)


def test_server_sleeping_past_deadline_is_timeout():
    with ToolServer(lambda conn, req: conn.sleep(30)) as server:
        started = time.monotonic()
        result = call(server.url, deadline=time.time() + 0.5)
        elapsed = time.monotonic() - started
        assert_failed(result, "timeout")
        assert 0.45 <= elapsed < 1.0
        assert_sent_once(server)


def test_socket_is_closed_on_timeout():
    closed = threading.Event()

    def notice_close(conn: Conn, req: Received) -> None:
        conn.sock.settimeout(5)
        if conn.sock.recv(1) == b"":
            closed.set()

    with ToolServer(notice_close) as server:
        assert_failed(call(server.url, deadline=time.time() + 0.3), "timeout")
        assert closed.wait(2)


def test_cancel_while_waiting_is_cancelled_promptly():
    closed = threading.Event()

    def slow(conn: Conn, req: Received) -> None:
        conn.sock.settimeout(10)
        if conn.sock.recv(1) == b"":
            closed.set()

    with ToolServer(slow) as server:
        cancel = threading.Event()
        cancelled_at: list[float] = []

        def cancel_soon() -> None:
            time.sleep(0.3)
            cancelled_at.append(time.monotonic())
            cancel.set()

        threading.Thread(target=cancel_soon, daemon=True).start()
        result = call(server.url, deadline=time.time() + 10, cancel=cancel)
        assert_failed(result, "cancelled")
        assert time.monotonic() - cancelled_at[0] < 0.3
        assert closed.wait(2), "the tool server never saw the connection close"
        assert_sent_once(server)


def test_cancel_before_start_sends_nothing():
    with ToolServer() as server:
        cancel = threading.Event()
        cancel.set()
        assert_failed(call(server.url, cancel=cancel), "cancelled")
        time.sleep(0.1)
        assert server.connections == 0


def test_deadline_already_passed_sends_nothing():
    with ToolServer() as server:
        assert_failed(call(server.url, deadline=time.time() - 1), "timeout")
        time.sleep(0.1)
        assert server.connections == 0


def test_each_call_sends_exactly_one_request():
    with ToolServer() as server:
        for n in range(5):
            assert call(server.url, {"n": n}, sequence=n).outcome == "ok"
        assert server.connections == 5
        assert [r.body["sequence"] for r in server.requests] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    "url",
    [
        None,
        "ftp://127.0.0.1/x",
        "https-ish",
        "http://127.0.0.1:99999/x",
        "http:///x",
        "http://127.0.0.1:1/a b",
        "http://127.0.0.1:1/caf\u00e9",
    ],
)
def test_bad_url_is_error(url):
    assert_failed(call(url), "error")


def test_input_that_is_not_json_is_error():
    with ToolServer() as server:
        assert_failed(call(server.url, {"x": {1, 2}}), "error")
        time.sleep(0.1)
        assert server.connections == 0


@pytest.mark.parametrize("url", ["http://127.0.0.1:1/a b", "http://127.0.0.1:1/caf\u00e9"])
def test_url_with_raw_spaces_or_non_ascii_is_refused_before_connecting(url):
    result = call(url)
    assert_failed(result, "error")
    assert "percent-encoded" in result.content
