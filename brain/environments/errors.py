"""The one error an Environment op raises, carrying the contract's failure outcome."""

from __future__ import annotations

from typing import Any

OP_FAILURES = ("error", "timeout", "cancelled", "unknown")


class EnvironmentOpError(Exception):
    """An Environment op that produced no result.

    `outcome` is what Brain knows: `error` (refused or definitely failed), `timeout`,
    `cancelled`, `unknown` (it may have had effects). `message` is short and safe to journal
    and to show the model: it names request paths, never server paths or internals.
    """

    def __init__(self, outcome: str, message: str) -> None:
        if outcome not in OP_FAILURES:
            raise ValueError(f"outcome must be one of {OP_FAILURES}, not {outcome!r}")
        super().__init__(message)
        self.outcome = outcome
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        """The `error` recorded in `environment_op_failed` (its `outcome` is recorded beside it)."""
        return {"outcome": self.outcome, "message": self.message}

    def __repr__(self) -> str:
        return f"EnvironmentOpError({self.outcome!r}, {self.message!r})"
