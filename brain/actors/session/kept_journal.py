"""A released session's journal, kept by the actor that let it go, for the session's next open.

Under the default policy a session is released after every turn, and its next command (a few
milliseconds later, the client's next message) usually comes back to the same actor: the
registry forwards a session's commands to the actor whose release it has not heard of yet
(brain/actors/session/release_report.py), and a quiet pool hands out the actor that was freed
last. Opening the
journal again is a recovery: the checkpoint read, its history's CRC pass, the tail decoded and
folded (~0.75 ms for a session of a hundred turns). The actor already knows all of that. So it
keeps the closed writer, which remembers where the journal ends and the checksum of every
byte, and the projection through its last record, and on the session's next open takes the
writer up again (`JournalWriter.reopen`) if the journal is exactly as it left it, checked
byte for byte by the CRC pass any open makes. If anything else wrote meanwhile (a web worker
admitting a turn, another actor) the check fails and the actor opens as usual.

It holds one session's state, no open descriptor and no lock; the writer's checks make the
journal, not this memory, the truth. A session mid-turn (a suspended turn) or with a journal
over `KEEP_MAX_BYTES` is not kept: the first resumes from its history, which only an open
builds, and the second's projection is not worth holding in an idle actor.
"""

from __future__ import annotations

from dataclasses import dataclass

from brain.journal import JournalWriter
from brain.journal.projection import Projection

KEEP_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class KeptJournal:
    session_id: str
    writer: JournalWriter  # closed; `reopen` takes it up again
    projection: Projection  # folded through the writer's last record


def keep(session_id: str, writer: JournalWriter | None,
         projection: Projection | None) -> KeptJournal | None:
    """What to keep of a session being released (call before its writer closes), or None."""
    if writer is None or projection is None or writer.broken:
        return None
    if projection.last_seq != writer.last_seq or projection.open_turn is not None \
            or projection.unfinished_effects or writer.journal_bytes > KEEP_MAX_BYTES:
        return None
    return KeptJournal(session_id, writer, projection)


def take_up(kept: KeptJournal | None, session_id: str) -> tuple[JournalWriter, Projection] | None:
    """The kept writer, open again, and its projection, if `kept` is this session's and its
    journal is unchanged; None otherwise (the caller opens the journal)."""
    if kept is None or kept.session_id != session_id or not kept.writer.reopen():
        return None
    return kept.writer, kept.projection
