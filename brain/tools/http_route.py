"""The `http` route: one POST to a Tool server, with the outcome its failure point implies.

Where a failure happens decides what Brain may claim about the effect. Until the last byte of
the request is written the server cannot have acted on it, so failures there are `error`. After
that Brain cannot know, so a lost connection, a cut or unreadable answer is `unknown`. A complete
HTTP error answer is the server saying no: `error`. The call's deadline is `timeout` and a
cancel is `cancelled`, in whichever phase they strike. Nothing here ever sends a request twice.

The exchange (connect, TLS with the platform's trust store and hostname checking, send, receive,
cancellation) is brain/net/http_exchange.py, shared with the model providers; this module keeps
the Tool's URL rules, the wire shape of its request and answer, and the outcome mapping.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from brain.effects import EffectFailed
from brain.environments.deadline import Deadline
from brain.net.http_exchange import (
    Cause,
    Exchange,
    ExchangeFailed,
    Limits,
    Origin,
    Phase,
    default_tls,
)
from brain.tools.outcome import EventShapeError, ToolOutcome, check_events

RESPONSE_LIMIT = 16 << 20
SNIPPET_CHARS = 200
HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


class _Stop(EffectFailed):
    """Leave the exchange with this outcome; raised only inside this module."""


@dataclass(frozen=True)
class Target:
    """Where to POST, parsed from the Tool's `url` (userinfo, if any, is dropped)."""

    tls: bool
    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: Any) -> Target:
        if not isinstance(url, str):
            raise _Stop("error", "http tool has no url")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _Stop("error", "http tool url must be an http:// or https:// URL")
        tls = parts.scheme == "https"
        try:
            port = parts.port or (443 if tls else 80)
        except ValueError:
            raise _Stop("error", "http tool url has a bad port") from None
        path = parts.path or "/"
        if parts.query:
            path = f"{path}?{parts.query}"
        if not all(33 <= ord(ch) < 127 for ch in path + parts.hostname):
            raise _Stop("error", "http tool url must be percent-encoded ASCII")
        return cls(tls, parts.hostname, port, path)

    @property
    def origin(self) -> Origin:
        return Origin(self.tls, self.host, self.port)


def call_http_tool(
    url: Any, payload: dict[str, Any], deadline: Deadline, cancel: threading.Event
) -> ToolOutcome:
    """POST `payload` as JSON to `url` once and turn whatever happens into a ToolOutcome."""
    try:
        target = Target.parse(url)
        body = _encode(payload)
        remaining = deadline.remaining()
        limits = Limits(deadline=None if remaining is None else time.monotonic() + remaining)
        with Exchange(target.origin, limits, cancel, _tls_context()) as exchange:
            exchange.request("POST", target.path, HEADERS, body)
            return _interpret(exchange.status, exchange.read_body(RESPONSE_LIMIT))
    except ExchangeFailed as failure:
        return ToolOutcome.failed(*_outcome_of(failure))
    except _Stop as stop:
        return ToolOutcome.failed(stop.outcome, stop.message)


def _encode(payload: dict[str, Any]) -> bytes:
    try:
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError):
        raise _Stop("error", "tool input is not JSON") from None


def _tls_context() -> ssl.SSLContext:
    """The trust store Tool calls verify against (a test swaps in its own CA)."""
    return default_tls()


def _outcome_of(failure: ExchangeFailed) -> tuple[str, str]:
    """(outcome, message) of an exchange that stopped: where it stopped decides."""
    if failure.cause is Cause.CANCELLED:
        return "cancelled", "tool call cancelled"
    if failure.cause is Cause.TIMED_OUT:
        return "timeout", "tool call timed out"
    if failure.phase is Phase.SEND:
        return "error", f"connection failed before the request was sent ({failure.reason})"
    return ("unknown" if failure.sent else "error"), failure.message


def _interpret(status: int, body: bytes) -> ToolOutcome:
    """Judge a whole answer: its status, then the JSON result inside it."""
    if status >= 300:
        detail = " (redirects are not followed)" if status < 400 else ""
        snippet = _snippet(body)
        message = f"tool server answered HTTP {status}{detail}"
        raise _Stop("error", f"{message}: {snippet}" if snippet else message)
    try:
        answer = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        message = f"tool answered HTTP {status} with a body that is not JSON"
        raise _Stop("unknown", message) from None
    if not isinstance(answer, dict) or "content" not in answer:
        raise _Stop("unknown", "tool answer has no content")
    is_error = answer.get("is_error", False)
    if not isinstance(is_error, bool):
        raise _Stop("unknown", "tool answer's is_error is not a boolean")
    try:
        events = check_events(answer.get("events", []))
    except EventShapeError as exc:
        raise _Stop("unknown", f"tool answer's {exc}") from None
    return ToolOutcome.ok(answer["content"], is_error=is_error, events=events)


def _snippet(body: bytes) -> str:
    """A short printable excerpt of an error body, to help whoever reads the transcript."""
    text = body[: SNIPPET_CHARS * 4].decode("utf-8", errors="replace")
    text = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    return text[:SNIPPET_CHARS]
