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

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


def _error(name: str, code: str, status: int) -> type[BrainError]:
    return type(name, (BrainError,), {"code": code, "status": status, "__doc__": f"{code}"})


InvalidRequest = _error("InvalidRequest", "invalid_request", 400)
Unauthorized = _error("Unauthorized", "unauthorized", 401)
Forbidden = _error("Forbidden", "forbidden", 403)
NotFound = _error("NotFound", "not_found", 404)
SessionBusy = _error("SessionBusy", "session_busy", 409)
SessionEnded = _error("SessionEnded", "session_ended", 409)
SessionActive = _error("SessionActive", "session_active", 409)
IdempotencyConflict = _error("IdempotencyConflict", "idempotency_conflict", 409)
RequestInProgress = _error("RequestInProgress", "request_in_progress", 409)
IdempotencyAmbiguous = _error("IdempotencyAmbiguous", "idempotency_ambiguous", 409)
AlreadyAnswered = _error("AlreadyAnswered", "already_answered", 409)  # a host call, answered
PayloadTooLarge = _error("PayloadTooLarge", "payload_too_large", 413)
UnsupportedMediaType = _error("UnsupportedMediaType", "unsupported_media_type", 415)
SessionDamaged = _error("SessionDamaged", "session_damaged", 500)
TeardownFailed = _error("TeardownFailed", "teardown_failed", 502)
Draining = _error("Draining", "draining", 503)
Internal = _error("Internal", "internal", 500)

BY_CODE: dict[str, type[BrainError]] = {
    cls.code: cls
    for cls in (
        InvalidRequest, Unauthorized, Forbidden, NotFound, SessionBusy, SessionEnded,
        SessionActive, IdempotencyConflict, RequestInProgress, IdempotencyAmbiguous,
        AlreadyAnswered,
        PayloadTooLarge, UnsupportedMediaType, SessionDamaged, TeardownFailed, Draining, Internal,
    )
}


def from_code(code: str, message: str) -> BrainError:
    """Rebuild an error that crossed a process boundary as (code, message)."""
    return BY_CODE.get(code, Internal)(message)
