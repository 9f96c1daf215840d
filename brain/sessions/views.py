"""The contract's response shapes built from a projection: Session and TurnResult; the message
of a refusal of a damaged journal."""

from __future__ import annotations

from typing import Any

from brain.journal.damage import Damage
from brain.protocol.records import TURN_ENDED


def session_view(session_id: str, projection: Any) -> dict[str, Any]:
    """`{id, status, created_at, updated_at, last_sequence, config, turn?}`."""
    view = {"id": session_id, **projection.status_view()}
    return view


def turn_result(session_id: str, turn: int, terminal: dict[str, Any]) -> dict[str, Any]:
    """TurnResult from the turn's terminal record (turn_ended or turn_failed)."""
    if terminal["kind"] == TURN_ENDED:
        return {"session_id": session_id, "sequence": turn, "status": "ended",
                "output": terminal.get("output")}
    return {"session_id": session_id, "sequence": turn, "status": "failed",
            "error": terminal.get("error")}


def damage_message(damage: Damage) -> str:
    """What a `session_damaged` answer tells its client, a read's or a write's alike: the
    refused segment file (relative to the data directory, so no more of the server's layout
    than that), the byte offset of the bad frame, its sequence and why, in the words of
    `brain journal verify`, so an operator can go straight to it."""
    return (f"the session's journal is damaged: {damage.describe()}; nothing more is written "
            "to it; see `brain journal verify`")
