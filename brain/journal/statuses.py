"""One status read of every session under a sessions root, without an actor.

What a start (and a drain, and a replaced webhook executor) needs to know of each session is in
its status projection: no transcript is decoded. A session whose journal cannot be read at all
is left out; a damaged one is given with its refusal, the projection then describing its
readable prefix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from brain.journal.errors import CorruptJournal, JournalError
from brain.journal.projection import Projection
from brain.journal.reader import SessionReader


def session_statuses(
        sessions_root: Path) -> Iterator[tuple[str, Projection, CorruptJournal | None]]:
    """`(session_id, status projection, refusal or None)` for each session, by id; nothing
    when the root does not exist."""
    if not sessions_root.is_dir():
        return
    for session_dir in sorted(sessions_root.iterdir()):
        try:
            projection, damage = SessionReader(session_dir).status_projection()
        except (JournalError, OSError, KeyError):
            continue
        yield session_dir.name, projection, damage
