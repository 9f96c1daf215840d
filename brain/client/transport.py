"""HTTP/1.1 connections from one client to one Brain server.

A small pool of keep-alive connections serves ordinary requests: a request checks a connection
out, so a slow synchronous send never blocks a concurrent read (the cancellation path polls the
session while its send is still waiting). SSE streams get dedicated connections that never return
to the pool.

Every socket operation has a timeout. A pooled connection may have been closed by the server
while idle (Brain's gunicorn keeps idle connections for 5 s); idle connections older than
`keepalive_secs` or already readable (EOF) are dropped before use, and when a reused connection
still breaks, the request is sent again on a fresh connection only if repeating it is safe: a
GET, or a request carrying an Idempotency-Key (the server then replays or refuses the
duplicate). Any other request raises TransportError rather than risking a second execution.

close() makes every later request raise ClientClosed and shuts down the sockets of requests and
streams in flight, so blocked readers wake up at once. Nothing is sent to the server: closing a
client never cancels, ends or deletes anything.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

from brain.client.errors import ClientClosed
from brain.client.routes import (  # noqa: F401 (Response, Timeouts, quote_segment: their old home)
    Response,
    Timeouts,
    lost,
    may_resend,
    quote_segment,
)


class _Failure(Exception):
    """Internal: an exchange failed in `phase` (connect, send or answer)."""

    def __init__(self, cause: BaseException, phase: str) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.phase = phase


class Transport:
    def __init__(self, base_url: str, default_headers: Mapping[str, str], timeouts: Timeouts, *,
                 max_idle: int = 4, keepalive_secs: float = 4.0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port][/prefix], not {base_url!r}")
        self.base_url = base_url
        self.timeouts = timeouts
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._ssl_context = ssl_context
        self._default_headers = dict(default_headers)
        self._max_idle = max_idle
        self._keepalive_secs = keepalive_secs
        self._lock = threading.Lock()
        self._idle: list[tuple[http.client.HTTPConnection, float]] = []
        self._sockets: set[socket.socket] = set()  # in use by requests and streams
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Idempotent. Later requests raise ClientClosed; in-flight ones are woken and fail."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            idle = [conn for conn, _ in self._idle]
            self._idle.clear()
            busy = list(self._sockets)
        for conn in idle:
            conn.close()
        for sock in busy:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def check_open(self) -> None:
        if self._closed:
            raise ClientClosed("the client is closed")

    def target(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        pairs = {k: v for k, v in (query or {}).items() if v is not None}
        return self._prefix + path + (f"?{urlencode(pairs)}" if pairs else "")

    # --- ordinary requests ------------------------------------------------------------------

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None,
                body: bytes | None = None, headers: Mapping[str, str] | None = None,
                timeout: float | None = None) -> Response:
        """One exchange; retried once on a fresh connection only when repeating it is safe."""
        all_headers = {**self._default_headers, **(headers or {})}
        key = all_headers.get("Idempotency-Key")
        target = self.target(path, query)
        wait = self.timeouts.request if timeout is None else timeout
        retried = False
        while True:
            conn, reused = self._checkout()
            try:
                return self._exchange(conn, method, target, body, all_headers, wait)
            except _Failure as failure:
                if self._closed:
                    raise ClientClosed("the client was closed during the request") from None
                timed_out = isinstance(failure.cause, TimeoutError)
                if reused and not timed_out and not retried and may_resend(method, all_headers):
                    retried = True  # the server closed a kept-alive connection: reopen once
                    continue
                raise lost(f"{method} {target}", phase=failure.phase, timed_out=timed_out,
                           wait=wait, key=key, cause=failure.cause) from failure.cause

    def _exchange(self, conn: http.client.HTTPConnection, method: str, target: str,
                  body: bytes | None, headers: dict[str, str], wait: float) -> Response:
        phase = "connect"
        sock: socket.socket | None = conn.sock
        try:
            if sock is None:
                conn.connect()
                sock = conn.sock
                self._register(sock)
            sock.settimeout(wait)
            phase = "send"
            conn.request(method, target, body=body, headers=headers)
            phase = "answer"
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            self._checkin(conn, sock, reusable=False)
            raise _Failure(exc, phase) from exc
        except BaseException:
            self._checkin(conn, sock, reusable=False)
            raise
        self._checkin(conn, sock, reusable=not resp.will_close)
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)

    def _new_connection(self, connect_timeout: float) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=connect_timeout,
                                               context=self._ssl_context)
        return http.client.HTTPConnection(self._host, self._port, timeout=connect_timeout)

    def _checkout(self) -> tuple[http.client.HTTPConnection, bool]:
        stale: list[http.client.HTTPConnection] = []
        chosen: http.client.HTTPConnection | None = None
        with self._lock:
            self.check_open()
            now = time.monotonic()
            while self._idle:
                conn, since = self._idle.pop()
                if now - since < self._keepalive_secs and _still_open(conn):
                    chosen = conn
                    self._sockets.add(conn.sock)
                    break
                stale.append(conn)
        for conn in stale:
            conn.close()
        if chosen is not None:
            return chosen, True
        return self._new_connection(self.timeouts.connect), False

    def _register(self, sock: socket.socket) -> None:
        with self._lock:
            if self._closed:
                sock.close()
                raise ClientClosed("the client is closed")
            self._sockets.add(sock)

    def _checkin(self, conn: http.client.HTTPConnection, sock: socket.socket | None,
                 reusable: bool) -> None:
        with self._lock:
            self._sockets.discard(sock)  # type: ignore[arg-type]
            keep = (reusable and not self._closed and conn.sock is not None
                    and len(self._idle) < self._max_idle)
            if keep:
                self._idle.append((conn, time.monotonic()))
        if not keep:
            conn.close()

    # --- streams ----------------------------------------------------------------------------

    def open_stream(self, path: str, *, query: Mapping[str, Any] | None = None,
                    headers: Mapping[str, str] | None = None,
                    timeout: float | None = None) -> StreamConnection:
        """A dedicated connection with its answer's headers read; the caller checks the status."""
        all_headers = {**self._default_headers, **(headers or {})}
        target = self.target(path, query)
        wait = self.timeouts.stream if timeout is None else timeout
        conn = self._new_connection(self.timeouts.connect)
        phase = "connect"
        sock: socket.socket | None = None
        try:
            conn.connect()
            sock = conn.sock
            self._register(sock)
            sock.settimeout(wait)
            phase = "send"
            conn.request("GET", target, headers=all_headers)
            phase = "answer"
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            self._release_stream(conn, sock)
            if self._closed:
                raise ClientClosed("the client was closed") from None
            error = lost(f"GET {target} (stream)", phase=phase, key=None, wait=wait,
                         timed_out=isinstance(exc, TimeoutError), cause=exc)
            error.maybe_applied = False  # a GET changes nothing
            raise error from exc
        except BaseException:
            self._release_stream(conn, sock)
            raise
        return StreamConnection(self, conn, sock, resp)

    def _release_stream(self, conn: http.client.HTTPConnection,
                        sock: socket.socket | None) -> None:
        with self._lock:
            self._sockets.discard(sock)  # type: ignore[arg-type]
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        conn.close()


class StreamConnection:
    """One open streaming answer; `readline()` returns b"" at the end of the body."""

    def __init__(self, transport: Transport, conn: http.client.HTTPConnection,
                 sock: socket.socket, response: http.client.HTTPResponse) -> None:
        self._transport = transport
        self._conn = conn
        self.socket = sock
        self.response = response
        self.status = response.status
        self.headers = {k.lower(): v for k, v in response.getheaders()}
        self._closed = False

    def readline(self) -> bytes:
        return self.response.readline()

    def read_all(self) -> bytes:
        try:
            return self.response.read()
        except (OSError, http.client.HTTPException):
            return b""

    def close(self) -> None:
        """Idempotent; safe from another thread (the shutdown wakes a blocked readline)."""
        if self._closed:
            return
        self._closed = True
        self._transport._release_stream(self._conn, self.socket)
        self.response.close()


def _still_open(conn: http.client.HTTPConnection) -> bool:
    """False when an idle connection is readable: the server closed it (or broke protocol)."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable
