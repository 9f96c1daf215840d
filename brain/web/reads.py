"""Reads straight from the journal and checkpoint: no actor is ever woken to answer them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from brain import errors
from brain.journal import CorruptJournal, SessionReader
from brain.settings import Settings
from brain.web.contract import SESSION_ID


def session_dir(settings: Settings, session_id: str) -> Path:
    """The session's directory; ids that could walk the filesystem never get this far."""
    if not SESSION_ID.match(session_id):
        raise errors.NotFound("no such session")
    path = settings.sessions_path / session_id
    if not (path / "journal").is_dir():
        raise errors.NotFound("no such session")
    return path


def reader(settings: Settings, session_id: str) -> SessionReader:
    return SessionReader(session_dir(settings, session_id))


def session_resource(settings: Settings, session_id: str) -> dict[str, Any]:
    """The Session shape; a refused journal shows as status `damaged`, not as an error."""
    path = session_dir(settings, session_id)
    try:
        return {"id": session_id, **SessionReader(path).status()}
    except CorruptJournal:
        return {"id": session_id, "status": "damaged", "created_at": None, "updated_at": None,
                "last_sequence": None, "config": None, "turn": None}


def damaged_error() -> errors.BrainError:
    return errors.SessionDamaged("the session's journal is damaged; see `brain journal verify`")
