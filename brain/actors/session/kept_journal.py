"""Released sessions' journals, kept by the actor that let them go, for each session's next open.

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

A suspended turn is kept too, with its history (the projection before its `turn_started` and
every record from there on: what its resumption replays from, brain/actors/session/suspension.py).
The registry hands the turn's outcome to the actor that let the turn go when that actor waits
idle (brain/actors/registry/pool.py), so a resumption usually finds here all an open would have
read: no recovery, and no second read of the turn's records.

An actor keeps the last `KEPT_SESSIONS` sessions it let go, within `KEPT_BYTES` of journal
(`KeptJournals`): a few actors serve many sessions in turn, so the one a session comes back to
has usually served others meanwhile. The registry keeps the same count of which actor let each
session go last (brain/actors/registry/pool.py), and prefers it.

Each entry holds one session's state, no open descriptor and no lock; the writer's checks make
the journal, not this memory, the truth. A session mid-turn that is not suspended (nothing resumes
it here) is not kept, nor one with a journal over `KEEP_MAX_BYTES`, half of `KEPT_BYTES`, so that
one long conversation never pushes out every other. A long conversation is where keeping pays
most: a full open decodes the whole transcript, so its cost grows with the conversation (at
1,200 turns of the benchmarks' text model, 3 MB of journal, about 9 ms of CPU against well under
1 ms for taking up what was kept). With a cap of 1 MiB, one session's sequential turns took 11-13
ms up to its 500th turn, then 21 ms and more, 52 ms by its 2,000th (tools/bench/growth.py).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from brain.journal import JournalWriter
from brain.journal.projection import Projection
from brain.sessions.state import Turn

KEPT_SESSIONS = 32
"""How many released sessions an actor keeps; the registry's pool counts the same."""
KEPT_BYTES = 8 << 20
"""The journal bytes an actor's kept sessions may add up to (their projections are about as big)."""
KEEP_MAX_BYTES = KEPT_BYTES // 2


@dataclass(frozen=True)
class KeptJournal:
    session_id: str
    writer: JournalWriter  # closed; `reopen` takes it up again
    projection: Projection  # folded through the writer's last record
    # a suspended turn's history: the projection before its turn_started, and every record
    # from that one on; None when no turn was suspended
    timeline: tuple[Projection, list[dict[str, Any]]] | None = None


def keep(session_id: str, writer: JournalWriter | None, projection: Projection | None,
         suspended: Turn | None = None,
         timeline: tuple[Projection, list[dict[str, Any]]] | None = None) -> KeptJournal | None:
    """What to keep of a session being released (call before its writer closes), or None.
    `suspended`: the turn the release lets go, kept only with its `timeline`."""
    if writer is None or projection is None or writer.broken:
        return None
    if projection.last_seq != writer.last_seq or writer.journal_bytes > KEEP_MAX_BYTES:
        return None
    if suspended is None:
        if projection.open_turn is not None or projection.unfinished_effects:
            return None
        return KeptJournal(session_id, writer, projection)
    if timeline is None or not _starts_turn(timeline, suspended.sequence) \
            or timeline[1][-1]["seq"] != writer.last_seq:
        return None
    return KeptJournal(session_id, writer, projection, timeline)


def take_up(kept: KeptJournal | None, session_id: str, suspended: Turn | None = None
            ) -> tuple[JournalWriter, Projection,
                       tuple[Projection, list[dict[str, Any]]] | None] | None:
    """The kept writer, open again, its projection, and the suspended turn's history, if `kept`
    is this session's, kept for the same suspended turn (or none), and its journal is
    unchanged; None otherwise (the caller opens the journal)."""
    if kept is None or kept.session_id != session_id:
        return None
    if suspended is None:
        if kept.timeline is not None:
            return None
    elif kept.timeline is None or not _starts_turn(kept.timeline, suspended.sequence):
        return None
    if not kept.writer.reopen():
        return None
    return kept.writer, kept.projection, kept.timeline


def _starts_turn(timeline: tuple[Projection, list[dict[str, Any]]], sequence: int) -> bool:
    records = timeline[1]
    return bool(records) and records[0]["seq"] == sequence


class KeptJournals:
    """The sessions an actor let go last, newest last: at most `KEPT_SESSIONS`, whose journals
    add up to at most `KEPT_BYTES`; the oldest go first."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, KeptJournal] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    def put(self, kept: KeptJournal | None, session_id: str) -> None:
        """What a release of `session_id` keeps (None: nothing, and any older entry goes)."""
        self.pop(session_id)
        if kept is None:
            return
        self._kept[session_id] = kept
        self._bytes += kept.writer.journal_bytes
        while len(self._kept) > KEPT_SESSIONS or self._bytes > KEPT_BYTES:
            _, oldest = self._kept.popitem(last=False)
            self._bytes -= oldest.writer.journal_bytes

    def pop(self, session_id: str) -> KeptJournal | None:
        """The session's entry, no longer kept (an open takes it up or opens as usual)."""
        kept = self._kept.pop(session_id, None)
        if kept is not None:
            self._bytes -= kept.writer.journal_bytes
        return kept
