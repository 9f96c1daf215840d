"""Reads straight from the journal and checkpoint: no actor is ever woken to answer them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from brain import errors
from brain.damage_report import report_damage
from brain.journal import CorruptJournal, SessionReader
from brain.sessions.views import damage_message
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
    """The Session shape; a refused journal shows as status `damaged` with its `damage`
    (segment, offset, sequence, reason), not as an error."""
    path = session_dir(settings, session_id)
    try:
        view, refused = SessionReader(path).status_and_damage()
    except CorruptJournal as exc:
        view, refused = {"status": "damaged", "created_at": None, "updated_at": None,
                         "last_sequence": None, "config": None, "turn": None}, exc
    resource = {"id": session_id, **view}
    if refused is not None:
        resource["damage"] = report_damage(settings.data_path, session_id, refused).as_json()
    return resource


def damaged_error(data_path: Path, session_id: str,
                  refused: CorruptJournal) -> errors.BrainError:
    """A read's `session_damaged`: the same detail as a refused write's, and as the
    Session's `damage`."""
    damage = report_damage(data_path, session_id, refused)
    return errors.SessionDamaged(damage_message(damage))
