"""The contract's response shapes built from a projection: Session and TurnResult."""

from __future__ import annotations

from typing import Any


def session_view(session_id: str, projection: Any) -> dict[str, Any]:
    """`{id, status, created_at, updated_at, last_sequence, config, turn?}`."""
    view = {"id": session_id, **projection.status_view()}
    return view


def turn_result(session_id: str, turn: int, terminal: dict[str, Any]) -> dict[str, Any]:
    """TurnResult from the turn's terminal record (turn_ended or turn_failed)."""
    if terminal["kind"] == "turn_ended":
        return {"session_id": session_id, "sequence": turn, "status": "ended",
                "output": terminal.get("output")}
    return {"session_id": session_id, "sequence": turn, "status": "failed",
            "error": terminal.get("error")}
