"""A damaged session's damage, named where operators look: one warning in the log per session.

Damage is found by whoever reads the journal first: a web worker answering a read (the Session,
its Events, its transcript, the session list) or the session actor opening it for a write. All
of them ask here. The log says it once, at warning level, on first detection, naming the
segment (relative to the data dir), the byte offset, the sequence and the reason in the words of
`brain journal verify` (brain/journal/damage.py). Every later read of the session would find
the same damage, and a log line per read would bury it.

"Once" holds across the processes that serve the data dir (web workers and session actors) and
across restarts: the first reporter leaves a mark, `run/damage/<session id>`, holding the damage
it logged, made by an atomic link so that two processes finding it together log it once. A
damage different from the one marked (the journal was restored, then damaged elsewhere) is
logged again. Deleting the session forgets its mark. Nothing under the session's own directory
is written: reads stay reads.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from brain.durable_dirs import make_dirs_durable
from brain.journal import CorruptJournal
from brain.journal.damage import Damage

log = logging.getLogger(__name__)

MARK_DIR = "damage"
KNOWN_LIMIT = 1024
_known: dict[str, str] = {}  # session id -> the damage this process logged or saw marked


def damage_mark(data_path: Path, session_id: str) -> Path:
    return data_path / "run" / MARK_DIR / session_id


def report_damage(data_path: Path, session_id: str, refused: CorruptJournal) -> Damage:
    """The damage `refused` names, its segment relative to the data dir; logged the first time
    it is found for this session."""
    damage = Damage.of(refused, data_path)
    text = damage.describe()
    if _known.get(session_id) == text:
        return damage  # this process logged it or saw it marked: no file system call
    try:
        first = _claim(damage_mark(data_path, session_id), text)
    except OSError as exc:  # a mark that cannot be written: say it rather than stay silent
        log.debug("damage mark for session %s not written: %s", session_id, exc)
        first = True
    if len(_known) >= KNOWN_LIMIT:
        _known.clear()
    _known[session_id] = text
    if first:
        log.warning("session %s is damaged: %s; it takes no write and its reads answer "
                    "session_damaged until its journal is restored or it is deleted "
                    "(see `brain journal verify`)", session_id, text)
    return damage


def forget_damage(data_path: Path, session_id: str) -> None:
    """The session is deleted: its mark goes with it."""
    _known.pop(session_id, None)
    try:
        damage_mark(data_path, session_id).unlink()
    except OSError:
        pass


def _claim(mark: Path, text: str) -> bool:
    """Whether this call is the first to mark `text` for the session: the mark is written
    whole under a private name and linked into place, which fails when it already exists."""
    if not mark.name or mark.name.startswith("."):
        return True
    make_dirs_durable(mark.parent)
    temp = mark.with_name(f".{mark.name}.{os.getpid()}.{threading.get_ident()}")
    temp.write_text(text, encoding="utf-8")
    try:
        os.link(temp, mark)
        return True
    except FileExistsError:
        try:
            if mark.read_text(encoding="utf-8") == text:
                return False
        except OSError:
            pass
        os.replace(temp, mark)  # another damage than the one marked: mark and log this one
        return True
    finally:
        temp.unlink(missing_ok=True)
