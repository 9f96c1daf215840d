"""Why a replay cannot be run at all, worded for an operator and coded as the HTTP contract's
errors are, so the CLI and the HTTP route say the same thing."""

from __future__ import annotations

NOT_FOUND = "not_found"
DAMAGED = "session_damaged"
INVALID = "invalid_request"


class ReplayRefused(Exception):
    """The session, the turn or the Agentloop does not allow a replay; nothing was run."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def as_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}
