"""Exceptions raised by the client SDK.

Callers need to tell three situations apart, because each asks for a different reaction:

* the server answered with an error (`BrainAPIError` and its per-code subclasses): the request
  was decided, read `.code`; retrying the same request gets the same answer;
* the answer never arrived (`TransportError`, `RequestTimeout`): the request may or may not have
  been applied (`.maybe_applied`); only a retry with the same Idempotency-Key and the same mode is
  safe, and `.idempotency_key` says which key the lost request carried;
* the client itself was closed (`ClientClosed`), or a cancellation signal fired before anything
  was sent (`Cancelled`): nothing about the server is implied.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class BrainClientError(Exception):
    """Base of every exception the SDK raises on purpose."""


class ClientClosed(BrainClientError):
    """The client (or the client behind a handle or stream) was closed; open a new client."""


class Cancelled(BrainClientError):
    """A cancellation signal had fired before the request was sent, so nothing was sent."""


class TransportError(BrainClientError):
    """The connection failed before a complete answer arrived.

    `maybe_applied` is False only when the request certainly never reached the server (for
    example the connection was refused). `idempotency_key` is the key the request carried, if any:
    retry with that same key and the same method and mode, never with a new key.
    """

    def __init__(self, message: str, *, maybe_applied: bool,
                 idempotency_key: str | None = None) -> None:
        super().__init__(message)
        self.maybe_applied = maybe_applied
        self.idempotency_key = idempotency_key


class RequestTimeout(TransportError):
    """A socket operation exceeded its timeout; the request may still be running on the server."""


class ProtocolError(BrainClientError):
    """The server answered something this SDK cannot read (not the contract's JSON shape)."""


class BrainAPIError(BrainClientError):
    """A non-2xx answer, carrying the contract's `{"error": {code, message, request_id}}` fields.

    `code` is None only when the body was not in the contract's shape (for example a proxy's
    HTML error page); `message` then holds the start of that body. `retry_after` is the
    answer's Retry-After in seconds, when it has one (the 503s `unavailable` and `overloaded`).

    Each subclass for one of the server's codes declares it with its status, as class keywords
    (`class SessionBusy(Conflict, code="session_busy", status=409)`), which enters it in
    BY_CODE; tests/client/test_error_codes.py holds BY_CODE to the server's own codes.
    """

    code: str | None = None
    status: int = 0

    def __init_subclass__(cls, code: str | None = None, status: int | None = None) -> None:
        super().__init_subclass__()
        if code is not None:
            cls.code = code
            BY_CODE[code] = cls
        if status is not None:
            cls.status = status

    def __init__(self, status: int, code: str | None, message: str,
                 request_id: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(f"{status} {code or 'error'}: {message}"
                         + (f" (request {request_id})" if request_id else ""))
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.retry_after = retry_after


BY_CODE: dict[str, type[BrainAPIError]] = {}
"""Every contract error code the SDK knows and its class, filled by the declarations below."""


class InvalidRequest(BrainAPIError, code="invalid_request", status=400):
    """400 invalid_request: malformed body, parameter or header, or an unknown configured name."""


class Unauthorized(BrainAPIError, code="unauthorized", status=401):
    """401 unauthorized: the bearer token is missing or unknown."""


class Forbidden(BrainAPIError, code="forbidden", status=403):
    """403 forbidden: a session token used on a route that is not about its session."""


class NotFound(BrainAPIError, code="not_found", status=404):
    """404 not_found: no such session (or not visible to this token)."""


class Conflict(BrainAPIError, status=409):
    """A 409: the request clashes with the session's state or with an Idempotency-Key."""


class SessionBusy(Conflict, code="session_busy"):
    """409 session_busy: another turn is active."""


class SessionEnded(Conflict, code="session_ended"):
    """409 session_ended: the session refuses new messages."""


class SessionActive(Conflict, code="session_active"):
    """409 session_active: delete needs an ended, failed or damaged session."""


class ForkInsideTurn(Conflict, code="fork_inside_turn"):
    """409 fork_inside_turn: a fork's sequence lies inside a turn; fork before it or after."""


class IdempotencyConflict(Conflict, code="idempotency_conflict"):
    """409 idempotency_conflict: the key was used with another body."""


class RequestInProgress(Conflict, code="request_in_progress"):
    """409 request_in_progress: the first request with this key is still running."""


class IdempotencyAmbiguous(Conflict, code="idempotency_ambiguous"):
    """409 idempotency_ambiguous: a restart left the key's request without an answer.

    It will never run again under this key. Read the session before choosing a new key.
    """


class AlreadyAnswered(Conflict, code="already_answered"):
    """409 already_answered: this host call was answered before (by this or another POST)."""


class BodyTimedOut(BrainAPIError, code="request_timeout", status=408):
    """408 request_timeout: the request's body did not arrive within the server's time budget
    (a stalled upload); send it again."""


class PayloadTooLarge(BrainAPIError, code="payload_too_large", status=413):
    """413 payload_too_large."""


class UnsupportedMediaType(BrainAPIError, code="unsupported_media_type", status=415):
    """415 unsupported_media_type."""


class SequenceBeyondEnd(BrainAPIError, code="sequence_beyond_end", status=422):
    """422 sequence_beyond_end: a fork's sequence is past the session's last record."""


class ServerError(BrainAPIError, status=500):
    """A 5xx answer."""


class SessionDamaged(ServerError, code="session_damaged"):
    """500 session_damaged: the session's journal is refused (see `brain journal verify`)."""


class InternalError(ServerError, code="internal"):
    """500 internal."""


class TeardownFailed(ServerError, code="teardown_failed", status=502):
    """502 teardown_failed: delete again with a new Idempotency-Key to request another attempt."""


class McpServerUnavailable(ServerError, code="mcp_server_unavailable", status=502):
    """502 mcp_server_unavailable: an MCP server the create named could not list its tools (the
    message names it); no session was created, so creating again once it is up is safe."""


class Draining(ServerError, code="draining", status=503):
    """503 draining: the server is shutting down; retry elsewhere or later."""


class Unavailable(ServerError, code="unavailable", status=503):
    """503 unavailable: the member of a convention holding the session is down; retry after
    `retry_after` seconds."""


class Overloaded(ServerError, code="overloaded", status=503):
    """503 overloaded: the server's memory budget is exhausted or the command waited too long;
    nothing was done: retry after `retry_after` seconds."""


BY_STATUS: dict[int, type[BrainAPIError]] = {
    400: InvalidRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    408: BodyTimedOut, 413: PayloadTooLarge, 415: UnsupportedMediaType, 503: Draining,
}


def api_error(status: int, body: bytes, headers: Mapping[str, str]) -> BrainAPIError:
    """The exception for a non-2xx answer: chosen by code, else by status, else generic."""
    code, message, request_id = _error_fields(body)
    request_id = request_id or headers.get("x-request-id")
    cls = BY_CODE.get(code or "") or BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else BrainAPIError
    return cls(status, code, message, request_id, _seconds(headers.get("retry-after")))


def _seconds(value: str | None) -> float | None:
    """A Retry-After in seconds (Brain sends seconds, never an HTTP date)."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _error_fields(body: bytes) -> tuple[str | None, str, str | None]:
    try:
        parsed: Any = json.loads(body)
        error = parsed["error"]
        code, message = error["code"], error.get("message", "")
        if isinstance(code, str) and isinstance(message, str):
            request_id = error.get("request_id")
            return code, message, request_id if isinstance(request_id, str) else None
    except (ValueError, TypeError, KeyError, AttributeError):
        pass
    return None, body[:200].decode("utf-8", "replace").strip() or "(empty body)", None
