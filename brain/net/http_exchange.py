"""One HTTP/1.1 request on its own connection, which a deadline or a cancel can stop in any phase.

Brain sends effects over HTTP (model calls, `http` Tools), and what it may journal about a failed
one depends on where it failed. Until the last byte of the request is written the server cannot
have acted on it (a body shorter than its Content-Length is no request): nothing happened. After
that, Brain cannot know. So an `ExchangeFailed` always says whether the request was fully
written (`sent`), whether it was cancelled, timed out (and which limit) or failed, and a short
reason that never quotes a header or a body. Each caller maps that to its own outcomes.

Cancellation: every blocking step is a `poll` of a non-blocking socket for at most `POLL_S`, and
between polls the caller's `threading.Event` and the limits are looked at. So a cancel is seen
within `POLL_S` in every phase (DNS resolution aside), in the caller's own thread, with no helper
thread per exchange, and the socket is closed by the thread that owns it (docs/decisions.md,
"One network client"). A waiting exchange wakes 20 times a second to look; that costs
microseconds.

Bytes are parsed by `http.client.HTTPResponse` (status line, headers, chunked, Content-Length or
close-delimited bodies) reading through `_Receiver`, which does the polled `recv`. Standard library
only; nothing here ever sends a request twice.
"""

from __future__ import annotations

import errno
import functools
import http.client
import io
import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from brain.net.exchange_terms import (
    Cause,
    ExchangeFailed,
    Limits,
    Origin,
    Phase,
    describe,
    encode_head,
    timed_out_text,
)
from brain.net.sse import SseEvent, SseParser

__all__ = ["Cause", "Exchange", "ExchangeFailed", "Limits", "Origin", "Phase", "default_tls"]

POLL_S = 0.05
READ_BYTES = 64 << 10


@functools.cache
def default_tls() -> ssl.SSLContext:
    """The platform's trust store (SSL_CERT_FILE / SSL_CERT_DIR apply), verified hostnames.

    Built once: loading the trust store is slow and a context is safe to share between threads.
    """
    return ssl.create_default_context()


class Exchange:
    """One request and its answer; use as a context manager (the socket is always closed).

    `request()` connects, writes the request and reads the status line and headers; then the body
    is read whole (`read_body`), as it arrives (`chunks`) or as Server-Sent Events (`events`).
    """

    def __init__(self, origin: Origin, limits: Limits, cancel: threading.Event,
                 tls: ssl.SSLContext | None = None) -> None:
        self.origin = origin
        self.limits = limits
        self.cancel = cancel
        self.tls = tls
        self.status = 0
        self.response: http.client.HTTPResponse | None = None
        self._sock: socket.socket | None = None
        self._phase = Phase.CONNECT
        self._connect_at = 0.0
        self._sent_at = 0.0
        self._progress_at = 0.0  # last write progress or, once the body flows, last byte read
        self._body_flows = False

    def __enter__(self) -> Exchange:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self.response is not None:
            self.response.close()
        if self._sock is not None:
            self._sock.close()

    def header(self, name: str) -> str:
        """A response header ("" when absent)."""
        assert self.response is not None
        return self.response.getheader(name) or ""

    # -- connect, send, and the response head -------------------------------------------------

    def request(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> None:
        """Connect, write the whole request, and read the answer's status line and headers."""
        try:
            head = encode_head(method, target, self.origin, headers, len(body))
        except ValueError as refused:
            raise self._fail(Cause.FAILED, str(refused)) from None
        self._connect_at = time.monotonic()
        self._check()
        self._sock = self._connect()
        self._phase = Phase.SEND
        self._write(head + body)
        self._phase = Phase.RESPONSE
        self._sent_at = time.monotonic()
        response = http.client.HTTPResponse(_Wrapped(self), method=method)  # type: ignore[arg-type]
        try:
            response.begin()
        except http.client.RemoteDisconnected:
            raise self._fail(Cause.FAILED, "connection closed after the request was sent, "
                             "with no answer") from None
        except (http.client.HTTPException, ValueError):
            raise self._fail(Cause.FAILED, "the answer is not HTTP") from None
        self.response = response
        self.status = response.status

    def _connect(self) -> socket.socket:
        origin = self.origin
        where = f"{origin.host}:{origin.port}"
        try:
            infos = socket.getaddrinfo(origin.host, origin.port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise self._fail(Cause.FAILED, f"cannot resolve {origin.host}") from None
        reason = "no address"
        for family, kind, proto, _, address in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                self._sock = sock
                code = sock.connect_ex(address)
                if code in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
                    self._wait(select.POLLOUT)
                    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code == 0:
                    return self._secure(sock) if origin.tls else sock
                reason = os.strerror(code)
            except ExchangeFailed:
                sock.close()
                raise
            except OSError as exc:
                reason = describe(exc)
            sock.close()
        raise self._fail(Cause.FAILED, f"cannot connect to {where}: {reason}", reason=reason)

    def _secure(self, sock: socket.socket) -> ssl.SSLSocket:
        """The TLS handshake, polled like everything else; nothing of the request is sent yet."""
        self._phase = Phase.TLS
        where = f"{self.origin.host}:{self.origin.port}"
        try:
            tls = (self.tls or default_tls()).wrap_socket(
                sock, server_hostname=self.origin.host, do_handshake_on_connect=False)
        except (ssl.SSLError, ValueError):
            raise self._fail(Cause.FAILED, f"cannot start TLS with {where}") from None
        self._sock = tls
        while True:
            try:
                tls.do_handshake()
                return tls
            except ssl.SSLWantReadError:
                self._wait(select.POLLIN)
            except ssl.SSLWantWriteError:
                self._wait(select.POLLOUT)
            except ssl.SSLCertVerificationError as exc:
                reason = exc.verify_message or "certificate not trusted"
                raise self._tls_failed(tls, where, reason) from None
            except OSError as exc:
                raise self._tls_failed(tls, where, describe(exc)) from None
            except ExchangeFailed:
                tls.close()
                raise

    def _tls_failed(self, tls: ssl.SSLSocket, where: str, reason: str) -> ExchangeFailed:
        tls.close()
        return self._fail(Cause.FAILED, f"cannot connect to {where}: TLS handshake failed: "
                          f"{reason}", reason=reason)

    def _write(self, data: bytes) -> None:
        """Write all of `data`; a TLS write that wants more room is retried with the same bytes."""
        sock = self._sock
        assert sock is not None
        view = memoryview(data)
        self._progress_at = time.monotonic()
        while view:
            self._wait(select.POLLOUT)
            try:
                sent = sock.send(view)
            except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError):
                continue
            except ssl.SSLWantReadError:
                self._wait(select.POLLIN)
                continue
            except OSError as exc:
                reason = describe(exc)
                message = f"request not sent: {reason}"
                raise self._fail(Cause.FAILED, message, reason=reason) from None
            view = view[sent:]
            self._progress_at = time.monotonic()

    # -- the body --------------------------------------------------------------------------------

    def chunks(self) -> Iterator[bytes]:
        """The body as it arrives; ExchangeFailed if it ends short of its framing."""
        response = self.response
        assert response is not None
        while True:
            try:
                data = response.read1(READ_BYTES)
            except (http.client.HTTPException, ValueError):
                raise self._fail(Cause.FAILED, "response cut short") from None
            if self.cancel.is_set():
                raise self._fail(Cause.CANCELLED, "cancelled")
            if not data:
                if response.length:
                    raise self._fail(Cause.FAILED, "response body ended before its length")
                return
            if not self._body_flows:
                self._body_flows = True
                self._progress_at = time.monotonic()
            yield data

    def read_body(self, limit: int) -> bytes:
        """The whole body; one over `limit` bytes fails (after the request was sent)."""
        parts: list[bytes] = []
        size = 0
        for data in self.chunks():
            size += len(data)
            if size > limit:
                raise self._fail(Cause.FAILED, f"response body larger than {limit} bytes")
            parts.append(data)
        return b"".join(parts)

    def events(self) -> Iterator[SseEvent]:
        """The body read as Server-Sent Events, each as soon as its blank line arrives."""
        parser = SseParser()
        for data in self.chunks():
            yield from parser.feed(data)

    # -- waiting ---------------------------------------------------------------------------------

    def _wait(self, events: int) -> None:
        """Until the socket is ready for `events`, looking at cancel and limits every POLL_S."""
        assert self._sock is not None
        poller = select.poll()  # poll, not select: a busy process may hold fds above 1023
        poller.register(self._sock, events | select.POLLERR | select.POLLHUP)
        while True:
            due = self._check()
            if poller.poll(min(POLL_S, due) * 1000):
                return

    def _check(self) -> float:
        """Raise when cancelled or past a limit; else the seconds until the nearest limit."""
        if self.cancel.is_set():
            raise self._fail(Cause.CANCELLED, "cancelled")
        now = time.monotonic()
        name, at = self._nearest_limit()
        if at is not None and now >= at:
            raise self._fail(Cause.TIMED_OUT, timed_out_text(self._phase, name, self.limits,
                                                              self.origin), limit=name)
        return POLL_S if at is None else at - now

    def _nearest_limit(self) -> tuple[str, float | None]:
        limits, phase = self.limits, self._phase
        mine, seconds, since = "", None, 0.0
        if phase in (Phase.CONNECT, Phase.TLS):
            mine, seconds, since = "connect_s", limits.connect_s, self._connect_at
        elif phase is Phase.SEND or self._body_flows:
            mine, seconds, since = "idle_s", limits.idle_s, self._progress_at
        else:
            mine, seconds, since = "first_byte_s", limits.first_byte_s, self._sent_at
        at = None if seconds is None else since + seconds
        if limits.deadline is not None and (at is None or limits.deadline <= at):
            return "deadline", limits.deadline
        return mine, at

    def _received(self) -> None:
        if self._body_flows:
            self._progress_at = time.monotonic()

    def _fail(self, cause: Cause, message: str, *, reason: str = "",
              limit: str | None = None) -> ExchangeFailed:
        if self.cancel.is_set():  # a failure caused by the cancel is the cancel
            cause, message, reason, limit = Cause.CANCELLED, "cancelled", "", None
        return ExchangeFailed(cause, self._phase, message, reason=reason, limit=limit)


class _Receiver(io.RawIOBase):
    """The socket as a readable stream whose every read is polled (cancel, limits)."""

    def __init__(self, exchange: Exchange) -> None:
        self._exchange = exchange

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        x = self._exchange
        sock = x._sock
        assert sock is not None
        while True:
            # TLS may hold decrypted bytes that the socket no longer shows as readable
            if not (isinstance(sock, ssl.SSLSocket) and sock.pending()):
                x._wait(select.POLLIN)
            try:
                count = sock.recv_into(buffer)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
                continue
            except ssl.SSLWantWriteError:
                x._wait(select.POLLOUT)
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return 0  # a close, with or without close_notify: the framing tells if it was cut
            except OSError as exc:
                reason = describe(exc)
                message = f"connection lost after the request was sent: {reason}"
                raise x._fail(Cause.FAILED, message, reason=reason) from None
            x._received()
            return count


class _Wrapped:
    """Just enough of a socket for http.client.HTTPResponse: a buffered, polled reader."""

    def __init__(self, exchange: Exchange) -> None:
        self._exchange = exchange

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_Receiver(self._exchange), READ_BYTES)
