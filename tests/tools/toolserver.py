"""A real http Tool server on 127.0.0.1 whose behaviour each test chooses.

It speaks raw sockets so that a test can have it misbehave at exactly the point it needs:
answer, answer 500, read the request and drop the connection, sleep past the deadline, cut the
answer short. It counts connections and requests so tests can prove Brain sent exactly one.
`close()` wakes every sleeper and joins every thread, so teardown never waits on a test's sleep.
"""

from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

JOIN_S = 5.0


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class Conn:
    """The server side of one connection, handed to a behaviour."""

    def __init__(self, sock: socket.socket, stopping: threading.Event) -> None:
        self.sock = sock
        self.stopping = stopping

    def sleep(self, seconds: float) -> None:
        self.stopping.wait(seconds)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answer(self, status: int, body: bytes, extra: str = "", close: bool = True) -> None:
        head = f"HTTP/1.1 {status} Status\r\nContent-Length: {len(body)}\r\n{extra}"
        if close:
            head += "Connection: close\r\n"
        self.send(head.encode() + b"\r\n" + body)

    def answer_json(self, value: Any, status: int = 200) -> None:
        self.answer(status, json.dumps(value).encode(), "Content-Type: application/json\r\n")

    def reset(self) -> None:
        """Close with RST instead of FIN (SO_LINGER 0)."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


Behaviour = Callable[[Conn, Received], None]


def answers(conn: Conn, req: Received) -> None:
    conn.answer_json({"content": {"got": req.body["invocation"]["input"]}, "is_error": False})


class ToolServer:
    """Listens on a fresh port; `behaviour` decides what each request gets."""

    def __init__(
        self,
        behaviour: Behaviour = answers,
        *,
        read_body: bool = True,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.behaviour = behaviour
        self.read_body = read_body
        self.tls = tls
        self.handshakes = 0
        self.requests: list[Received] = []
        self.connections = 0
        self.errors: list[BaseException] = []
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}/tool"
        self._start(self._accept_loop)

    def __enter__(self) -> ToolServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._socks.append(sock)
            self._start(self._serve, sock)

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(JOIN_S)
        try:
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_side=True)
                with self._lock:
                    self.handshakes += 1
                    self._socks.append(sock)
            conn = Conn(sock, self._stopping)
            req = self._read_request(sock)
            if req is None:
                return
            with self._lock:
                self.requests.append(req)
            self.behaviour(conn, req)
        except OSError:
            pass
        except BaseException as exc:  # surfaced by close() so a broken behaviour fails its test
            self.errors.append(exc)
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def _read_request(self, sock: socket.socket) -> Received | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if not self.read_body:
            return Received(method, path, headers, None)
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            body += chunk
        return Received(method, path, headers, json.loads(body))

    def close(self) -> None:
        self._stopping.set()
        self._listener.close()
        with self._lock:
            socks = list(self._socks)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(JOIN_S)
        alive = [t for t in self._threads if t.is_alive()]
        assert not alive, f"tool server threads still running: {alive}"
        if self.errors:
            raise self.errors[0]


def refused_url() -> str:
    """A loopback URL nothing listens on: bind a port, never listen, close it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/tool"
