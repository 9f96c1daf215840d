"""The terms of one HTTP exchange: where it goes, how long each phase may take, how it stopped.

Kept apart from the exchange itself (brain/net/http_exchange.py) because callers map these to
their own outcomes without needing the socket work: `ExchangeFailed.sent` is what decides between
"nothing happened" and "Brain cannot know".
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


@dataclass(frozen=True)
class Origin:
    """Where to connect: scheme (TLS or not), host and port."""

    tls: bool
    host: str
    port: int

    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == (443 if self.tls else 80) else f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host_header()}"


@dataclass(frozen=True)
class Limits:
    """How long each phase may take, in seconds; None means no such limit.

    `connect_s` bounds TCP plus TLS; `idle_s` bounds a stalled write and, once the body flows,
    the gap between two reads; `first_byte_s` runs from the last request byte to the first body
    byte; `deadline` (a `time.monotonic()` instant) bounds the whole exchange.
    """

    connect_s: float | None = None
    first_byte_s: float | None = None
    idle_s: float | None = None
    deadline: float | None = None


class Phase(enum.Enum):
    CONNECT = "connect"  # resolving, TCP: nothing sent
    TLS = "tls"  # the handshake: nothing of the request sent
    SEND = "send"  # writing the request: not all of it has left
    RESPONSE = "response"  # the request is out: the server may have acted on it


class Cause(enum.Enum):
    CANCELLED = "cancelled"
    TIMED_OUT = "timed out"
    FAILED = "failed"


class ExchangeFailed(Exception):
    """Why and where an exchange stopped. `message` is short, generic and secret-free.

    `limit` names the expired Limits field when `cause` is TIMED_OUT; `reason` is the bare cause
    of a failure (an errno text, "response cut short", ...), for callers that word their own.
    """

    def __init__(self, cause: Cause, phase: Phase, message: str, *, reason: str = "",
                 limit: str | None = None) -> None:
        super().__init__(message)
        self.cause, self.phase, self.message = cause, phase, message
        self.reason, self.limit = reason or message, limit

    @property
    def sent(self) -> bool:
        """Whether the whole request was written, so the server may have acted on it."""
        return self.phase is Phase.RESPONSE


def encode_head(method: str, target: str, origin: Origin, headers: Mapping[str, str],
                length: int) -> bytes:
    """The request line and headers; ValueError for anything that could split the request."""
    if not target or not all(33 <= ord(ch) < 127 for ch in target):
        raise ValueError("request not sent: the request target is not percent-encoded")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {origin.host_header()}"]
    all_headers = {"Content-Length": str(length), "Connection": "close", "User-Agent": "brain",
                   **headers}
    for name, value in all_headers.items():
        if not name or not _TCHAR.issuperset(name) or any(c in value for c in "\r\n\0"):
            # its text would quote the header (an API key, say), so nothing of it is kept
            raise ValueError("request not sent: a request header value is invalid")
        lines.append(f"{name}: {value}")
    try:
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError("request not sent: a request header value is invalid") from None


def timed_out_text(phase: Phase, limit: str, limits: Limits, origin: Origin) -> str:
    if limit == "deadline":
        return f"deadline passed ({phase.value} phase)"
    seconds = getattr(limits, limit)
    if phase is Phase.CONNECT:
        return f"connect to {origin.host}:{origin.port} timed out after {seconds:g} s"
    if phase is Phase.TLS:
        return f"TLS handshake with {origin.host}:{origin.port} timed out after {seconds:g} s"
    if phase is Phase.SEND:
        return "timed out writing the request"
    if limit == "first_byte_s":
        return f"no response within {seconds:g} s"
    return f"stream idle for more than {seconds:g} s"


def describe(exc: BaseException) -> str:
    """A short, secret-free reason: errno text or the exception's class, never its payload."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__
