"""https Tool URLs: TLS against a real local server with a throwaway certificate."""

from __future__ import annotations

import shutil
import ssl
import threading
import time

import pytest

from brain.tools import ToolOutcome, http_route, run_tool
from tests.tools.toolserver import Conn, Received, ToolServer

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture
def server_tls(certificate) -> ssl.SSLContext:
    cert, key = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


@pytest.fixture
def trusted(certificate, monkeypatch) -> None:
    """Make Brain trust the test certificate (as SSL_CERT_FILE would for an operator)."""
    context = ssl.create_default_context(cafile=str(certificate[0]))
    monkeypatch.setattr(http_route, "_tls_context", lambda: context)


def call(url: str, *, deadline: float | None = None, cancel=None) -> ToolOutcome:
    return run_tool(
        {"name": "lookup", "route": "http", "url": url},
        {"id": "c1", "input": {"word": "tls"}},
        session_id="s",
        sequence=9,
        deadline=deadline,
        cancel=cancel or threading.Event(),
    )


def test_https_answer_is_ok(server_tls, trusted):
    with ToolServer(tls=server_tls) as server:
        result = call(server.url, deadline=time.time() + 10)
        assert (result.outcome, result.content) == ("ok", {"got": {"word": "tls"}})
        assert server.connections == 1 and len(server.requests) == 1


def test_untrusted_certificate_is_error_and_sends_nothing(server_tls):
    with ToolServer(tls=server_tls) as server:
        result = call(server.url, deadline=time.time() + 10)
        assert (result.outcome, result.is_error) == ("error", True)
        assert "TLS" in result.content
        time.sleep(0.1)
        assert server.requests == []


def test_https_drop_after_request_is_unknown(server_tls, trusted):
    with ToolServer(lambda conn, req: conn.reset(), tls=server_tls) as server:
        assert call(server.url).outcome == "unknown"
        assert server.connections == 1


def test_https_truncated_answer_is_unknown(server_tls, trusted):
    def truncated(conn: Conn, req: Received) -> None:
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")

    with ToolServer(truncated, tls=server_tls) as server:
        assert call(server.url).outcome == "unknown"


def test_https_close_delimited_answer_is_ok(server_tls, trusted):
    def close_delimited(conn: Conn, req: Received) -> None:
        conn.send(b'HTTP/1.0 200 OK\r\n\r\n{"content": "whole"}')

    with ToolServer(close_delimited, tls=server_tls) as server:
        result = call(server.url, deadline=time.time() + 10)
        assert (result.outcome, result.content) == ("ok", "whole")


def test_https_500_is_error(server_tls, trusted):
    with ToolServer(lambda conn, req: conn.answer(500, b"no"), tls=server_tls) as server:
        result = call(server.url)
        assert result.outcome == "error" and "500" in result.content


def test_https_timeout_and_cancel(server_tls, trusted):
    with ToolServer(lambda conn, req: conn.sleep(30), tls=server_tls) as server:
        started = time.monotonic()
        assert call(server.url, deadline=time.time() + 0.3).outcome == "timeout"
        assert time.monotonic() - started < 1
        cancel = threading.Event()
        timer = threading.Timer(0.2, cancel.set)
        timer.start()
        try:
            started = time.monotonic()
            assert call(server.url, cancel=cancel).outcome == "cancelled"
            assert time.monotonic() - started < 0.6
        finally:
            timer.cancel()
        assert server.connections == 2 and len(server.requests) == 2


def test_https_hostname_mismatch_is_error(server_tls, trusted):
    """The certificate names 127.0.0.1 only; reaching the same server as `localhost` fails."""
    with ToolServer(tls=server_tls) as server:
        result = call(server.url.replace("127.0.0.1", "localhost"), deadline=time.time() + 10)
        assert (result.outcome, result.is_error) == ("error", True)
        time.sleep(0.1)
        assert server.requests == []
