"""A session as it stood just before one sequence, and everything it journaled from there on.

A resumed activation is replayed against the journal (the session core's replay): it needs the
projection as it was when its turn began and every record since. The writer's open folds that
in its one pass when the checkpoint lies before the turn (`JournalWriter.open(history_from=)`);
this is the slower way for when it does not: a fold of the whole journal from its first record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from brain.journal.errors import CorruptJournal, InvalidRecord
from brain.journal.projection import Projection, ProjectionBuilder
from brain.journal.scan import JournalScan
from brain.journal.segments import segment_name

Timeline = tuple[Projection, list[dict[str, Any]]]
"""The projection through `seq - 1`, and every record from `seq` on, in order."""


def read_timeline(journal_dir: Path, seq: int) -> Timeline:
    """The journal from its start: folded up to `seq`, then kept record by record."""
    builder = ProjectionBuilder()
    before: Projection | None = None
    records: list[dict[str, Any]] = []
    for frame in JournalScan(journal_dir):
        record = frame.record
        if record["seq"] >= seq:
            if before is None:
                before = builder.build()
            records.append(record)
        try:
            builder.apply(record)
        except InvalidRecord as exc:
            path = Path(journal_dir) / segment_name(frame.segment)
            raise CorruptJournal(path, frame.offset, frame.seq, str(exc)) from None
    return (before if before is not None else builder.build()), records
