"""HTTP/1.1 over a plain socket, for requests no HTTP client library would send: malformed
heads, hand-made chunked bodies, bodies that stop halfway. Every wait has a timeout."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

ANSWER_TIMEOUT_SECS = 20.0


@dataclass
class RawAnswer:
    status: int
    headers: dict[str, str]  # lower-cased names (the last of any repeated one)
    body: bytes
    closed: bool  # the server closed the connection after this answer
    elapsed: float = field(default=0.0)  # seconds from the first byte sent to the answer's end

    def json(self) -> Any:
        return json.loads(self.body)

    def error(self) -> dict[str, Any]:
        """The contract's error object, checked for its shape and its X-Request-Id."""
        assert self.headers.get("content-type", "").startswith("application/json"), self
        error = self.json()["error"]
        assert set(error) == {"code", "message", "request_id"}, error
        assert error["request_id"].startswith("req_"), error
        assert self.headers.get("x-request-id") == error["request_id"], self
        return error


def connect(port: int, timeout: float = ANSWER_TIMEOUT_SECS) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.settimeout(timeout)
    return sock


def read_answer(sock: socket.socket, timeout: float = ANSWER_TIMEOUT_SECS,
                started: float | None = None) -> RawAnswer:
    """One answer read from `sock`: its head, then Content-Length bytes (or up to the close),
    and whether the server closed the connection after it."""
    started = time.monotonic() if started is None else started
    deadline = time.monotonic() + timeout
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = _recv(sock, deadline)
        if not chunk:
            raise AssertionError(f"the connection closed before an answer: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "-1"))
    closed = False
    while length < 0 or len(body) < length:
        chunk = _recv(sock, deadline)
        if not chunk:
            closed = True
            break
        body += chunk
    elapsed = time.monotonic() - started
    if not closed:
        closed = headers.get("connection", "").lower() == "close" and _closes(sock, deadline)
    return RawAnswer(status, headers, body[:length] if length >= 0 else body, closed, elapsed)


def exchange(port: int, request: bytes, timeout: float = ANSWER_TIMEOUT_SECS) -> RawAnswer:
    """Send `request` on a new connection and read the one answer."""
    with connect(port, timeout) as sock:
        started = time.monotonic()
        sock.sendall(request)
        return read_answer(sock, timeout, started)


def chunked(body: bytes, piece: int = 7) -> bytes:
    """`body` in chunked transfer coding, `piece` bytes a chunk, with the last chunk."""
    out = b""
    for start in range(0, len(body), piece):
        part = body[start:start + piece]
        out += b"%x\r\n%s\r\n" % (len(part), part)
    return out + b"0\r\n\r\n"


def _recv(sock: socket.socket, deadline: float) -> bytes:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise AssertionError("no answer within the timeout")
    sock.settimeout(remaining)
    try:
        return sock.recv(65536)
    except ConnectionResetError:
        return b""


def _closes(sock: socket.socket, deadline: float) -> bool:
    """Whether the server closes the connection (a read ends) before `deadline`."""
    try:
        return _recv(sock, deadline) == b""
    except (TimeoutError, AssertionError):
        return False
