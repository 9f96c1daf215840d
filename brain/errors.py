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


BY_CODE: dict[str, type[BrainError]] = {}
"""Every contract error code and its class, in the order they are declared below."""


def _error(code: str, status: int, meaning: str, *,
           retry_after: int | None = None) -> type[BrainError]:
    """The BrainError subclass for `code`, named after it (`not_found` -> NotFound) and
    entered in BY_CODE. `meaning` says when a client meets it (the OpenAPI document's error
    responses are written from these, so codes and statuses are defined here only)."""
    name = "".join(word.capitalize() for word in code.split("_"))
    cls = type(name, (BrainError,), {"code": code, "status": status, "__doc__": meaning,
                                     "retry_after": retry_after})
    BY_CODE[code] = cls
    return cls


InvalidRequest = _error("invalid_request", 400,
                        "a malformed body, parameter or header; an unknown configured name")
Unauthorized = _error("unauthorized", 401,
                      "no bearer token, or a token this server did not issue")
Forbidden = _error("forbidden", 403,
                   "a session token used on a route that is not about its own session")
NotFound = _error("not_found", 404,
                  "no such session (or another session, for a session token), route or host call")
SessionBusy = _error("session_busy", 409, "another turn is active")
SessionEnded = _error("session_ended", 409, "the session is ended")
SessionActive = _error("session_active", 409, "the session must be ended before it is deleted")
ForkInsideTurn = _error("fork_inside_turn", 409,
                        "a fork's `at_sequence` falls inside a turn (from its turn_started to "
                        "the record that ends it)")
IdempotencyConflict = _error("idempotency_conflict", 409,
                             "the Idempotency-Key was used with another request")
RequestInProgress = _error("request_in_progress", 409,
                           "the request with this Idempotency-Key is still running")
IdempotencyAmbiguous = _error("idempotency_ambiguous", 409,
                              "the request with this Idempotency-Key was cut off unanswered")
AlreadyAnswered = _error("already_answered", 409, "the host call was answered already")
RequestTimeout = _error("request_timeout", 408,
                        "the request body did not arrive within the server's time budget")
PayloadTooLarge = _error("payload_too_large", 413, "the body exceeds this route's limit")
UnsupportedMediaType = _error("unsupported_media_type", 415,
                              "a body that is not application/json")
SequenceBeyondEnd = _error("sequence_beyond_end", 422,
                           "a fork's `at_sequence` is past the session's last committed record")
SessionDamaged = _error("session_damaged", 500,
                        "the session's journal is refused (see `brain journal verify`)")
TeardownFailed = _error("teardown_failed", 502, "an Environment could not be torn down")
McpServerUnavailable = _error("mcp_server_unavailable", 502,
                              "an MCP server the create body names could not list its tools "
                              "(the message names it); no session was created")
Draining = _error("draining", 503, "the server is shutting down and admits no new work")
Unavailable = _error("unavailable", 503, "the convention member holding the session is down; "
                     "retry after `Retry-After` s", retry_after=5)
Overloaded = _error("overloaded", 503,
                    "the server's memory budget is exhausted, or a command waited too long for "
                    "a session actor (or the admission backlog, where bounded, is full); "
                    "nothing was done: retry after the Retry-After seconds")
Internal = _error("internal", 500, "anything else; the message reveals nothing")


def from_code(code: str, message: str) -> BrainError:
    """Rebuild an error that crossed a process boundary as (code, message)."""
    return BY_CODE.get(code, Internal)(message)
