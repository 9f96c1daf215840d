"""Connection handling against a scripted fake HTTP server (no Brain needed), and SSE framing.

A real server cannot be made to drop a kept-alive connection at a chosen moment; this one can.
It answers the first request on each connection and, depending on the test, closes the
connection when a second request arrives on it: exactly what a server whose keep-alive timer
fired as the request was sent looks like to the client.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from brain.client import (
    Brain,
    BrainAPIError,
    ClientClosed,
    RequestTimeout,
    ServerError,
    TransportError,
)
from brain.net.sse import SseEvent, SseParser
from tests.support.server import free_port

SESSION = {"id": "s1", "status": "idle", "last_sequence": 1, "session_id": "s1",
           "sequence": None}


@dataclass
class Seen:
    connection: int
    method: str
    path: str
    headers: dict[str, str]


def answer(status: int = 200, body: bytes | None = None, content_type: str = "application/json",
           close: bool = False) -> bytes:
    body = json.dumps(SESSION).encode() if body is None else body
    head = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}", "Connection: " + ("close" if close else "keep-alive")]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


# A handler gets (connection index, request index on that connection) and returns the bytes to
# answer, DROP to close the connection without answering, HANG to never answer, or
# ANSWER_THEN_CLOSE + bytes to answer and then close the connection despite keep-alive.
DROP, HANG, ANSWER_THEN_CLOSE = b"drop", b"hang", b"close:"
Handler = Callable[[int, int], bytes]


class FakeServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.seen: list[Seen] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stopping = threading.Event()
        self.connections = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn, self.connections - 1),
                             daemon=True).start()

    def _serve(self, conn: socket.socket, index: int) -> None:
        conn.settimeout(10)
        buffer = b""
        with conn:
            for request_index in range(100):
                try:
                    while b"\r\n\r\n" not in buffer:
                        data = conn.recv(65536)
                        if not data:
                            return
                        buffer += data
                except OSError:
                    return
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                lines = head.decode().split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip()
                           for k, _, v in (line.partition(":") for line in lines[1:])}
                length = int(headers.get("content-length", 0))
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                self.seen.append(Seen(index, method, path, headers))
                reply = self.handler(index, request_index)
                if reply == DROP:
                    return
                if reply == HANG:
                    self.stopping.wait(30)
                    return
                if reply.startswith(ANSWER_THEN_CLOSE):
                    conn.sendall(reply[len(ANSWER_THEN_CLOSE):])
                    return
                conn.sendall(reply)

    def stop(self) -> None:
        self.stopping.set()
        self.listener.close()
        self.thread.join(timeout=5)


@pytest.fixture
def make_server() -> Iterator[Callable[[Handler], FakeServer]]:
    servers: list[FakeServer] = []

    def make(handler: Handler) -> FakeServer:
        servers.append(FakeServer(handler))
        return servers[-1]

    yield make
    for server in servers:
        server.stop()


def second_request_drops(connection: int, request: int) -> bytes:
    return DROP if request == 1 else answer()


def test_a_get_is_resent_on_a_fresh_connection(make_server) -> None:  # type: ignore[no-untyped-def]
    server = make_server(second_request_drops)
    with Brain(server.url, "t", timeout=5) as brain:
        session = brain.session("s1")
        assert session.refresh().status == "idle"
    assert [(s.connection, s.method) for s in server.seen] == [(0, "GET"), (0, "GET"), (1, "GET")]
    assert server.seen[0].headers["authorization"] == "Bearer t"


def test_an_unkeyed_post_is_never_resent(make_server) -> None:  # type: ignore[no-untyped-def]
    server = make_server(second_request_drops)
    with Brain(server.url, "t", timeout=5) as brain:
        session = brain.session("s1")
        with pytest.raises(TransportError) as lost:
            session.interrupt()
    assert lost.value.maybe_applied and lost.value.idempotency_key is None
    assert [s.method for s in server.seen] == ["GET", "POST"]  # one POST: never repeated


def test_a_keyed_post_is_resent_with_the_same_key(make_server) -> None:  # type: ignore[no-untyped-def]
    server = make_server(second_request_drops)
    with Brain(server.url, "t", timeout=5) as brain:
        assert brain.session("s1").interrupt(idempotency_key="k-1").sequence is None
    posts = [s for s in server.seen if s.method == "POST"]
    assert [(s.connection, s.headers["idempotency-key"]) for s in posts] == [(0, "k-1"),
                                                                             (1, "k-1")]


def test_a_connection_the_server_closed_while_idle_is_not_reused(make_server) -> None:  # type: ignore[no-untyped-def]
    # Connection 0 answers keep-alive, then the server closes it (its keep-alive timer fired).
    server = make_server(lambda c, r: ANSWER_THEN_CLOSE + answer() if c == 0 else answer())
    with Brain(server.url, "t", timeout=5) as brain:
        session = brain.session("s1")
        time.sleep(0.2)  # the FIN reaches the client while the connection sits in the pool
        assert session.interrupt().session_id == "s1"  # unkeyed, yet safe: a fresh connection
    assert [(s.connection, s.method) for s in server.seen] == [(0, "GET"), (1, "POST")]


def test_every_socket_operation_has_a_timeout(make_server) -> None:  # type: ignore[no-untyped-def]
    server = make_server(lambda c, r: HANG)
    started = time.monotonic()
    with Brain(server.url, "t", timeout=0.5) as brain, pytest.raises(RequestTimeout) as slow:
        brain.session("s1")
    assert time.monotonic() - started < 3
    assert slow.value.maybe_applied


def test_an_error_body_outside_the_contract(make_server) -> None:  # type: ignore[no-untyped-def]
    server = make_server(lambda c, r: answer(502, b"<html>bad gateway</html>", "text/html"))
    with Brain(server.url, "t", timeout=5) as brain, pytest.raises(ServerError) as failed:
        brain.session("s1")
    assert (failed.value.status, failed.value.code) == (502, None)
    assert "bad gateway" in failed.value.message


def test_a_refused_connection_was_certainly_not_applied() -> None:
    with Brain(f"http://127.0.0.1:{free_port()}", "t", timeout=5) as brain:
        with pytest.raises(TransportError) as refused:
            brain.create_session()
        assert not refused.value.maybe_applied
    with pytest.raises(ClientClosed):
        brain.create_session()


def test_sse_parser_follows_the_event_stream_format() -> None:
    parser = SseParser()
    lines = [b": keep-alive\n", b"\n", b"id: 7\r\n", b"event: turn_started\n",
             b"data: {\"a\":\n", b"data:1}\n", b"\n", b"event: model_delta\n",
             b"data: {\"started\": 5, \"delta\": \"hi\"}\n", b"\n"]
    messages = [m for line in lines for m in parser.feed(line)]
    assert messages == [SseEvent("turn_started", '{"a":\n1}', "7"),
                        SseEvent("model_delta", '{"started": 5, "delta": "hi"}', None)]


def test_an_error_frame_mid_stream_raises_the_servers_error(make_server) -> None:  # type: ignore[no-untyped-def]
    """The server ends a stream whose journal turned out damaged with `event: error` (no id);
    the SDK raises that error instead of reconnecting into a 500."""
    event = {"sequence": 1, "kind": "session_created", "at": "2026-12-02T00:00:00.000Z",
             "data": {}}
    error = {"error": {"code": "session_damaged", "message": "the journal is damaged",
                       "request_id": "req_1"}}
    stream = (f"id: 1\nevent: session_created\ndata: {json.dumps(event)}\n\n"
              f"event: error\ndata: {json.dumps(error)}\n\n").encode()

    def handler(connection: int, request: int) -> bytes:
        return ANSWER_THEN_CLOSE + answer(body=stream, content_type="text/event-stream")

    server = make_server(handler)
    with Brain(server.url, "t", timeout=5) as brain:
        followed = brain.session("s1", fetch=False).follow()
        assert next(followed).sequence == 1
        with pytest.raises(BrainAPIError) as info:
            next(followed)
        assert (info.value.status, info.value.code) == (500, "session_damaged")
        assert info.value.request_id == "req_1"
    assert server.connections == 1  # no reconnect after the error frame
