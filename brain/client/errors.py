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
    HTML error page); `message` then holds the start of that body.
    """

    def __init__(self, status: int, code: str | None, message: str,
                 request_id: str | None = None) -> None:
        super().__init__(f"{status} {code or 'error'}: {message}"
                         + (f" (request {request_id})" if request_id else ""))
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id


class InvalidRequest(BrainAPIError):
    """400 invalid_request: malformed body, parameter or header, or an unknown configured name."""


class Unauthorized(BrainAPIError):
    """401 unauthorized: the bearer token is missing or unknown."""


class Forbidden(BrainAPIError):
    """403 forbidden: a session token used on a route that is not about its session."""


class NotFound(BrainAPIError):
    """404 not_found: no such session (or not visible to this token)."""


class Conflict(BrainAPIError):
    """A 409: the request clashes with the session's state or with an Idempotency-Key."""


class SessionBusy(Conflict):
    """409 session_busy: another turn is active."""


class SessionEnded(Conflict):
    """409 session_ended: the session refuses new messages."""


class SessionActive(Conflict):
    """409 session_active: delete needs an ended, failed or damaged session."""


class ForkInsideTurn(Conflict):
    """409 fork_inside_turn: a fork's sequence lies inside a turn; fork before it or after."""


class IdempotencyConflict(Conflict):
    """409 idempotency_conflict: the key was used with another body."""


class RequestInProgress(Conflict):
    """409 request_in_progress: the first request with this key is still running."""


class IdempotencyAmbiguous(Conflict):
    """409 idempotency_ambiguous: a restart left the key's request without an answer.

    It will never run again under this key. Read the session before choosing a new key.
    """


class AlreadyAnswered(Conflict):
    """409 already_answered: this host call was answered before (by this or another POST)."""


class BodyTimedOut(BrainAPIError):
    """408 request_timeout: the request's body did not arrive within the server's time budget
    (a stalled upload); send it again."""


class PayloadTooLarge(BrainAPIError):
    """413 payload_too_large."""


class SequenceBeyondEnd(BrainAPIError):
    """422 sequence_beyond_end: a fork's sequence is past the session's last record."""


class UnsupportedMediaType(BrainAPIError):
    """415 unsupported_media_type."""


class ServerError(BrainAPIError):
    """A 5xx answer."""


class SessionDamaged(ServerError):
    """500 session_damaged: the session's journal is refused (see `brain journal verify`)."""


class InternalError(ServerError):
    """500 internal."""


class TeardownFailed(ServerError):
    """502 teardown_failed: delete again with a new Idempotency-Key to request another attempt."""


class Draining(ServerError):
    """503 draining: the server is shutting down; retry elsewhere or later."""


BY_CODE: dict[str, type[BrainAPIError]] = {
    "invalid_request": InvalidRequest,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "session_busy": SessionBusy,
    "session_ended": SessionEnded,
    "session_active": SessionActive,
    "fork_inside_turn": ForkInsideTurn,
    "idempotency_conflict": IdempotencyConflict,
    "request_in_progress": RequestInProgress,
    "idempotency_ambiguous": IdempotencyAmbiguous,
    "already_answered": AlreadyAnswered,
    "request_timeout": BodyTimedOut,
    "payload_too_large": PayloadTooLarge,
    "unsupported_media_type": UnsupportedMediaType,
    "sequence_beyond_end": SequenceBeyondEnd,
    "session_damaged": SessionDamaged,
    "internal": InternalError,
    "teardown_failed": TeardownFailed,
    "draining": Draining,
}

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
    return cls(status, code, message, request_id)


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
