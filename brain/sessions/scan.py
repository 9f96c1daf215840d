"""Which sessions have work in flight, read from their journals (no actor is asked)."""

from __future__ import annotations

from pathlib import Path

IN_FLIGHT = ("creating", "running", "ending")


def sessions_in_flight(sessions_root: Path) -> list[str]:
    """Sessions whose projection says creation, a turn or an ending has not finished."""
    from brain.journal import JournalError, SessionReader

    found: list[str] = []
    if not sessions_root.is_dir():
        return found
    for session_dir in sorted(sessions_root.iterdir()):
        try:
            status = SessionReader(session_dir).status()["status"]
        except (JournalError, OSError, KeyError):
            continue
        if status in IN_FLIGHT:
            found.append(session_dir.name)
    return found
