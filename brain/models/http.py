"""One HTTP exchange for one model call, with the outcome rules of docs/models.md.

Standard library only (`socket` + `http.client`): the executor calls providers from plain OS
threads in a process that is not monkey-patched by gevent. Each call opens its own connection and
closes it afterwards, so no state can leak from one call into the next.

The module's real job is to know *where* a failure happened, because that decides the journaled
outcome: before the whole request was written the model cannot have seen it (`error`); after that
Brain cannot know (`unknown`, or `timeout` when one of our own deadlines expired). Cancellation
is honoured in every phase within ~0.1 s: connecting (TCP, then TLS) polls the event, and once
connected a watcher thread shuts the socket down, which wakes any blocked read or write.
"""

from __future__ import annotations

import errno
import http.client
import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from brain.models.base import ModelCallError, ProviderSpecError

POLL_S = 0.05
ERROR_BODY_LIMIT = 64 << 10
BODY_LIMIT = 64 << 20
MESSAGE_LIMIT = 300


@dataclass(frozen=True)
class Timeouts:
    """Per-model deadlines, in seconds (spec keys `connect_timeout_s`, ...)."""

    connect_s: float = 10.0
    first_byte_s: float = 120.0
    idle_s: float = 60.0

    @classmethod
    def from_spec(cls, name: str, spec: dict[str, Any]) -> Timeouts:
        values = {}
        for field, key in (
            ("connect_s", "connect_timeout_s"),
            ("first_byte_s", "first_byte_timeout_s"),
            ("idle_s", "idle_timeout_s"),
        ):
            if key in spec:
                value = spec[key]
                if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                    raise ProviderSpecError(f"models.{name}: {key} must be a number > 0")
                values[field] = float(value)
        return cls(**values)


@dataclass(frozen=True)
class Endpoint:
    """Where to POST: parsed once from `base_url`, without any userinfo it might carry."""

    scheme: str
    host: str
    port: int
    path: str
    query: str = ""

    @classmethod
    def parse(cls, name: str, url: str) -> Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ProviderSpecError(f"models.{name}: base_url must be an http(s) URL")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise ProviderSpecError(f"models.{name}: base_url has a bad port") from None
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"), parts.query)

    def target(self, path: str) -> str:
        """The request target for `path` under the base URL, keeping its query (api-version)."""
        return self.path + path + (f"?{self.query}" if self.query else "")

    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    def __str__(self) -> str:
        # no query: it may carry a credential, and this string goes into logs
        return f"{self.scheme}://{self.host_header()}{self.path}"


class Exchange:
    """A POST whose response can be read whole or as a stream; always used as a context manager.

    Every failure leaves as ModelCallError with the outcome its phase implies. `secrets` are
    scrubbed from any text taken from the server before it goes into an error message.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        timeouts: Timeouts,
        cancel: threading.Event,
        secrets: Sequence[str] = (),
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.tls = tls
        self.timeouts = timeouts
        self.cancel = cancel
        self.secrets = [s for s in secrets if s]
        self.status = 0
        self.content_type = ""
        self._sock: socket.socket | None = None
        self._conn: http.client.HTTPConnection | None = None
        self._response: http.client.HTTPResponse | None = None
        self._done = threading.Event()
        self._first_byte_deadline = 0.0
        self._got_body_byte = False

    def __enter__(self) -> Exchange:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._done.set()
        if self._response is not None:
            self._response.close()
        if self._conn is not None:
            self._conn.close()
        elif self._sock is not None:
            self._sock.close()

    # -- phase 1 and 2: connect and send; any failure here is `error` -------------------------

    def post(self, path: str, headers: dict[str, str], body: bytes) -> None:
        """Connect, write the whole request, and wait for the status line and headers."""
        self._sock = self._connect()
        conn = http.client.HTTPConnection(self.endpoint.host, self.endpoint.port)
        conn.sock = self._sock
        self._conn = conn
        all_headers = {
            "Host": self.endpoint.host_header(),
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
            "Connection": "close",
            "User-Agent": "brain",
            **headers,
        }
        try:
            self._sock.settimeout(self.timeouts.idle_s)
            conn.request("POST", self.endpoint.target(path), body=body, headers=all_headers)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            # ValueError: a header value http.client refuses (a key with a newline, say);
            # its text would quote the header, so only its class name is kept.
            raise self._failure(exc, sent=False) from None
        # phase 3: the request is out; from here on the model may have seen it.
        self._first_byte_deadline = time.monotonic() + self.timeouts.first_byte_s
        try:
            self._sock.settimeout(self.timeouts.first_byte_s)
            self._response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            raise self._failure(exc, sent=True) from None
        self.status = self._response.status
        self.content_type = (self._response.getheader("Content-Type") or "").lower()

    def _connect(self) -> socket.socket:
        """TCP (and TLS) connect with a deadline, polling `cancel`; never raises past `error`."""
        ep = self.endpoint
        deadline = time.monotonic() + self.timeouts.connect_s
        where = f"{ep.host}:{ep.port}"
        try:
            infos = socket.getaddrinfo(ep.host, ep.port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise ModelCallError("error", f"cannot resolve {ep.host}") from None
        reason = "no address"
        for family, kind, proto, _, address in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                poller = select.poll()
                poller.register(sock, select.POLLOUT)
                code = sock.connect_ex(address)
                while code in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
                    if self.cancel.is_set():
                        raise ModelCallError("cancelled", "model call cancelled")
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise ModelCallError(
                            "error",
                            f"connect to {where} timed out after {self.timeouts.connect_s:g} s",
                        )
                    # poll, not select: a busy server can hold descriptors above FD_SETSIZE
                    if poller.poll(min(POLL_S, remaining) * 1000):
                        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code:
                    reason = os.strerror(code)
                    sock.close()
                    continue
                if ep.scheme == "https":
                    tls = self.tls or ssl.create_default_context()
                    sock = tls.wrap_socket(
                        sock, server_hostname=ep.host, do_handshake_on_connect=False
                    )
                    self._handshake(sock, deadline)
                sock.setblocking(True)
                self._sock = sock
                threading.Thread(target=self._watch_cancel, daemon=True).start()
                return sock
            except ModelCallError:
                sock.close()
                raise
            except (OSError, ssl.SSLError) as exc:
                sock.close()
                if self.cancel.is_set():
                    raise ModelCallError("cancelled", "model call cancelled") from None
                reason = _describe(exc)
        raise ModelCallError("error", f"cannot connect to {where}: {reason}")

    def _handshake(self, sock: ssl.SSLSocket, deadline: float) -> None:
        """A non-blocking TLS handshake that honours `cancel` and the connect deadline."""
        poller = select.poll()
        while True:
            try:
                sock.do_handshake()
                return
            except ssl.SSLWantReadError:
                wanted = select.POLLIN
            except ssl.SSLWantWriteError:
                wanted = select.POLLOUT
            poller.register(sock, wanted)
            while True:
                if self.cancel.is_set():
                    raise ModelCallError("cancelled", "model call cancelled")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ModelCallError(
                        "error", f"TLS handshake timed out after {self.timeouts.connect_s:g} s"
                    )
                if poller.poll(min(POLL_S, remaining) * 1000):
                    break
            poller.unregister(sock)

    def _watch_cancel(self) -> None:
        """Shut the socket down when the call is cancelled: wakes any blocked read or write."""
        while not self._done.wait(POLL_S):
            if self.cancel.is_set():
                try:
                    # socket.socket.shutdown also works under TLS without touching the SSL state
                    socket.socket.shutdown(self._sock, socket.SHUT_RDWR)  # type: ignore[arg-type]
                except OSError:
                    pass
                return

    # -- phase 4: the body; any failure here is `unknown`, `timeout` or `cancelled` ------------

    def chunks(self) -> Iterator[bytes]:
        """The body as it arrives. Raises unknown if it ends short of its declared length."""
        response = self._response
        assert response is not None and self._sock is not None
        while True:
            if self._got_body_byte:
                self._sock.settimeout(self.timeouts.idle_s)
            else:
                self._sock.settimeout(max(self._first_byte_deadline - time.monotonic(), 0.001))
            try:
                data = response.read1(65536)
            except (OSError, http.client.HTTPException) as exc:
                raise self._failure(exc, sent=True) from None
            if self.cancel.is_set():
                raise ModelCallError("cancelled", "model call cancelled")
            if not data:
                if response.length:
                    raise ModelCallError("unknown", "response body ended before its length")
                return
            self._got_body_byte = True
            yield data

    def read_body(self, limit: int = BODY_LIMIT) -> bytes:
        """The whole body; a body over `limit` is `unknown` (the call did run)."""
        parts: list[bytes] = []
        size = 0
        for data in self.chunks():
            size += len(data)
            if size > limit:
                raise ModelCallError("unknown", f"response body larger than {limit} bytes")
            parts.append(data)
        return b"".join(parts)

    def read_error_body(self) -> bytes:
        """Best effort: an error status is already definite, so a short body is fine."""
        try:
            return self.read_body(ERROR_BODY_LIMIT)
        except ModelCallError as exc:
            if exc.outcome == "cancelled":
                raise
            return b""

    def http_error(self, detail: str) -> ModelCallError:
        """A complete error answer: the provider refused the call (`error`, with its status)."""
        text = f"HTTP {self.status}"
        detail = self.scrub(" ".join(detail.split()))
        if detail:
            text += f": {detail}"
        return ModelCallError("error", text[:MESSAGE_LIMIT], status=self.status)

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        return text

    def _failure(self, exc: BaseException, *, sent: bool) -> ModelCallError:
        if self.cancel.is_set():
            return ModelCallError("cancelled", "model call cancelled")
        if not sent:
            if isinstance(exc, TimeoutError):
                return ModelCallError("error", "timed out writing the request")
            return ModelCallError("error", f"request not sent: {_describe(exc)}")
        if isinstance(exc, TimeoutError):
            if self._got_body_byte:
                return ModelCallError(
                    "timeout", f"stream idle for more than {self.timeouts.idle_s:g} s"
                )
            return ModelCallError("timeout", f"no response within {self.timeouts.first_byte_s:g} s")
        return ModelCallError(
            "unknown", f"connection lost after the request was sent: {_describe(exc)}"
        )


def _describe(exc: BaseException) -> str:
    """A short, secret-free reason: errno text or the exception's class, never its payload."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, http.client.RemoteDisconnected):
        return "server closed the connection without a response"
    if isinstance(exc, http.client.IncompleteRead):
        return "response cut short"
    if isinstance(exc, ValueError):
        return "a request header value is invalid"
    return type(exc).__name__
