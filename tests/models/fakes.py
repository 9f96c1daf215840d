"""Fake model servers on 127.0.0.1 that speak each wire protocol over real sockets.

A `FakeServer` accepts connections on a thread, records every request (path, headers, JSON
body) and plays the next programmed answer. Answers are small functions of a `Wire`, so a test
can send exactly the bytes it needs: JSON, SSE (chunked or close-delimited), an error status, a
stream cut in the middle, a slow first byte, a close before answering. Nothing here sleeps
longer than the test asks for, and `close()` wakes every sleeper so teardown is immediate.
"""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

Answer = Callable[["Wire"], None]

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    429: "Too Many Requests",
    500: "Internal Server Error",
    529: "Overloaded",
}


@dataclass
class Recorded:
    """One request as the server read it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class Wire:
    """The server side of one connection, handed to an answer."""

    def __init__(self, sock: socket.socket, stopping: threading.Event) -> None:
        self.sock = sock
        self.stopping = stopping
        self.chunked = False

    def sleep(self, seconds: float) -> None:
        self.stopping.wait(seconds)

    def head(self, status: int, headers: dict[str, str], *, chunked: bool = False) -> None:
        self.chunked = chunked
        lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if chunked:
            lines.append("Transfer-Encoding: chunked")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())

    def body(self, data: bytes) -> None:
        if self.chunked:
            data = f"{len(data):x}\r\n".encode() + data + b"\r\n"
        self.sock.sendall(data)

    def end(self) -> None:
        if self.chunked:
            self.sock.sendall(b"0\r\n\r\n")

    def reset(self) -> None:
        """Close with RST instead of FIN: the client sees a connection reset."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


class FakeServer:
    """A threaded HTTP/1.1 server on an ephemeral loopback port. Use as a context manager."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)  # accept() polls, so close() never waits on it
        self.port = self.listener.getsockname()[1]
        self.requests: list[Recorded] = []
        self.answers: queue.Queue[Answer] = queue.Queue()
        self.stopping = threading.Event()
        self.read_request = True
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def answer(self, *answers: Answer) -> FakeServer:
        for a in answers:
            self.answers.put(a)
        return self

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()
        for conn in list(self._conns):
            with contextlib.suppress(OSError):
                conn.close()
        for thread in [self._accept, *self._threads]:
            thread.join(timeout=2)

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._conns.append(conn)
            thread = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            if self.tls is not None:
                try:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                except (OSError, ssl.SSLError):
                    return
            try:
                answer = self.answers.get_nowait()
            except queue.Empty:
                answer = json_answer(500, {"error": {"message": "no answer programmed"}})
            if getattr(answer, "before_request", False):
                answer(Wire(conn, self.stopping))
                return
            self.requests.append(_read_request(conn))
            answer(Wire(conn, self.stopping))
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()


def _read_request(conn: socket.socket) -> Recorded:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            raise OSError("client went away")
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, path, _ = request_line.split(" ", 2)
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            raise OSError("client went away")
        body += piece
    return Recorded(method, path, headers, json.loads(body) if body else None)


# -- answers -----------------------------------------------------------------------------------


def json_answer(status: int, body: Any, *, delay: float = 0.0, raw: bytes | None = None) -> Answer:
    """A complete JSON answer (or `raw` bytes) with Content-Length, after `delay` seconds."""

    def play(wire: Wire) -> None:
        wire.sleep(delay)
        data = raw if raw is not None else json.dumps(body).encode()
        wire.head(status, {"Content-Type": "application/json", "Content-Length": str(len(data))})
        wire.body(data)

    return play


def sse_answer(
    frames: Iterable[str],
    *,
    chunked: bool = True,
    gap: float = 0.0,
    first_delay: float = 0.0,
    cut: bool = False,
    stall_after: int | None = None,
) -> Answer:
    """An SSE stream of preformatted `frames`.

    `cut`: drop the connection after the frames without ending the body. `stall_after=n`: after
    n frames go silent (until the server closes). `gap`: seconds between frames.
    """
    frames = list(frames)

    def play(wire: Wire) -> None:
        wire.sleep(first_delay)
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        if not chunked:
            headers["Connection"] = "close"
        wire.head(200, headers, chunked=chunked)
        for i, frame in enumerate(frames):
            if stall_after is not None and i == stall_after:
                wire.sleep(30)
                return
            if i and gap:
                wire.sleep(gap)
            wire.body(frame.encode())
        if cut:
            wire.reset()
            return
        wire.end()

    return play


def close_before_answer(*, reset: bool = False) -> Answer:
    """Read the whole request, then close (FIN, or RST with `reset`) without a status line."""

    def play(wire: Wire) -> None:
        if reset:
            wire.reset()
        else:
            wire.sock.close()

    return play


def reset_while_reading() -> Answer:
    """Read only the first bytes of the request, then RST: the client cannot finish writing."""

    def play(wire: Wire) -> None:
        wire.sock.recv(1024)
        wire.reset()

    play.before_request = True  # type: ignore[attr-defined]
    return play


def never_read() -> Answer:
    """Accept the connection and read nothing: a large request blocks while being written."""

    def play(wire: Wire) -> None:
        wire.sleep(30)

    play.before_request = True  # type: ignore[attr-defined]
    return play


def refused_port() -> int:
    """A loopback port with nothing listening on it."""
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class BlackHole:
    """A loopback port whose accept backlog is full: new connects hang in SYN_SENT."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0)
        self.port = self.listener.getsockname()[1]
        self.fillers: list[socket.socket] = []
        for _ in range(4):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", self.port))
            self.fillers.append(s)

    def close(self) -> None:
        for s in self.fillers:
            s.close()
        self.listener.close()


# -- protocol frames ---------------------------------------------------------------------------


def openai_frames(chunks: Iterable[dict[str, Any]], *, done: bool = True) -> list[str]:
    """`data: {chunk}` frames, ending in `data: [DONE]` unless `done` is false."""
    frames = [f"data: {json.dumps(c)}\n\n" for c in chunks]
    if done:
        frames.append("data: [DONE]\n\n")
    return frames


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def anthropic_frames(events: Iterable[dict[str, Any]]) -> list[str]:
    """`event: {type}` / `data: {json}` frames."""
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events]
