"""A session's projection as it stood at one sequence, read without its actor.

Forking a session (brain/sessions/fork.py) copies the state the parent had at a chosen record,
while the parent may be appending. Like every reader this only reads: the scan yields whole
batches, so a batch being written is either all there or not yet. It starts from the
checkpoint when the checkpoint lies at or before the sequence (the common case of a fork at a
recent record), else from the first record, and stops at the end of the sequence's batch: the
records after it are never decoded.

It gives two projections: through the record itself, and through the end of its batch. Only
the second is a state anyone could have seen, since a batch becomes visible whole; a session's
creation batch, say, holds `session_created` and then its seeded transcript.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from brain.journal.checkpoint import load_valid_checkpoint
from brain.journal.errors import CorruptJournal, InvalidRecord
from brain.journal.projection import Projection, ProjectionBuilder
from brain.journal.scan import JournalScan
from brain.journal.segments import segment_name
from brain.journal.writer import CHECKPOINT_NAME


@dataclass(frozen=True)
class ProjectionAt:
    """`record`: folded through the sequence asked for; `batch`: through the end of the
    batch that committed it (the same projection when the record ends its batch). When the
    journal ends before the sequence, both are the whole journal's, their `last_seq` below it."""

    record: Projection
    batch: Projection


def projection_at(session_dir: Path, seq: int) -> ProjectionAt:
    """The session in `session_dir` as record `seq` and its batch left it.

    Raises CorruptJournal where the journal up to that batch's end is refused.
    """
    journal_dir = session_dir / "journal"
    cp, point, _why = load_valid_checkpoint(journal_dir, session_dir / CHECKPOINT_NAME)
    usable = cp is not None and point is not None and cp.seq <= seq
    builder = ProjectionBuilder(cp.projection if usable else None)
    if builder.last_seq >= seq:  # a checkpoint is written at a batch's end
        at = builder.build()
        return ProjectionAt(at, at)
    record: Projection | None = None
    frame = None
    try:
        for frame in JournalScan(journal_dir, point.cursor if usable else None):
            builder.apply(frame.record)
            if frame.seq == seq:
                record = builder.build()
            if frame.seq >= seq and frame.end_of_batch:
                break
    except InvalidRecord as exc:
        assert frame is not None
        raise CorruptJournal(journal_dir / segment_name(frame.segment), frame.offset,
                             frame.seq, str(exc)) from None
    batch = builder.build()
    return ProjectionAt(record if record is not None else batch, batch)
