"""Brain's own exception types, one per contract error code.

Business code raises these anywhere; `brain/web/errors.py` turns them into the contract's error
shape in one place, so no status code is scattered through the rest of Brain.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """The configuration file is unusable; raised at start-up, never per request.

    It lives here, not in brain/config.py, so that the parts config validates (model providers
    raise a subclass for a bad `[models.NAME]` table) need not import config.
    """


class BrainError(Exception):
    """An error with a contract code; `message` is safe to show a client."""

    code = "internal"
    status = 500
    retry_after: int | None = None  # seconds, sent as `Retry-After` when set

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


def _error(name: str, code: str, status: int, meaning: str) -> type[BrainError]:
    """A BrainError subclass; `meaning` says when a client meets it (the OpenAPI document's
    error responses are written from these, so codes and statuses are defined here only)."""
    return type(name, (BrainError,), {"code": code, "status": status, "__doc__": meaning})


InvalidRequest = _error("InvalidRequest", "invalid_request", 400,
                        "a malformed body, parameter or header; an unknown configured name")
Unauthorized = _error("Unauthorized", "unauthorized", 401,
                      "no bearer token, or a token this server did not issue")
Forbidden = _error("Forbidden", "forbidden", 403,
                   "a session token used on a route that is not about its own session")
NotFound = _error("NotFound", "not_found", 404,
                  "no such session (or another session, for a session token), route or host call")
SessionBusy = _error("SessionBusy", "session_busy", 409, "another turn is active")
SessionEnded = _error("SessionEnded", "session_ended", 409, "the session is ended")
SessionActive = _error("SessionActive", "session_active", 409,
                       "the session must be ended before it is deleted")
IdempotencyConflict = _error("IdempotencyConflict", "idempotency_conflict", 409,
                             "the Idempotency-Key was used with another request")
RequestInProgress = _error("RequestInProgress", "request_in_progress", 409,
                           "the request with this Idempotency-Key is still running")
IdempotencyAmbiguous = _error("IdempotencyAmbiguous", "idempotency_ambiguous", 409,
                              "the request with this Idempotency-Key was cut off unanswered")
AlreadyAnswered = _error("AlreadyAnswered", "already_answered", 409,
                         "the host call was answered already")
PayloadTooLarge = _error("PayloadTooLarge", "payload_too_large", 413,
                         "the body exceeds this route's limit")
UnsupportedMediaType = _error("UnsupportedMediaType", "unsupported_media_type", 415,
                              "a body that is not application/json")
SessionDamaged = _error("SessionDamaged", "session_damaged", 500,
                        "the session's journal is refused (see `brain journal verify`)")
TeardownFailed = _error("TeardownFailed", "teardown_failed", 502,
                        "an Environment could not be torn down")
Draining = _error("Draining", "draining", 503,
                  "the server is shutting down and admits no new work")


class Unavailable(BrainError):
    """the convention member holding the session is down; retry after `Retry-After` s"""

    code = "unavailable"
    status = 503
    retry_after = 5


Overloaded = _error("Overloaded", "overloaded", 503,
                    "the server's memory budget is exhausted, or a command waited too long for "
                    "a session actor (or the admission backlog, where bounded, is full); "
                    "nothing was done: retry after the Retry-After seconds")
Internal = _error("Internal", "internal", 500, "anything else; the message reveals nothing")

BY_CODE: dict[str, type[BrainError]] = {
    cls.code: cls
    for cls in (
        InvalidRequest, Unauthorized, Forbidden, NotFound, SessionBusy, SessionEnded,
        SessionActive, IdempotencyConflict, RequestInProgress, IdempotencyAmbiguous,
        AlreadyAnswered,
        PayloadTooLarge, UnsupportedMediaType, SessionDamaged, TeardownFailed, Draining,
        Unavailable, Overloaded, Internal,
    )
}


def from_code(code: str, message: str) -> BrainError:
    """Rebuild an error that crossed a process boundary as (code, message)."""
    return BY_CODE.get(code, Internal)(message)
