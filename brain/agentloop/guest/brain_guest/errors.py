"""The two exceptions an Agentloop meets: a guest call Brain refused, and a turn it fails."""

from __future__ import annotations


class TurnFailed(Exception):
    """Raise it to end the turn as failed with this code and message (`turn_failed`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class GuestCallError(TurnFailed):
    """Brain answered a guest call with an error (`model_call_limit`, `invalid_request`, ...).

    Uncaught, it fails the turn with the same code and message, as the default loop does."""

    def __init__(self, op: str, code: str, message: str) -> None:
        super().__init__(code, message)
        self.op = op
