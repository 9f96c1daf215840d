"""Brain's journal: an append-only, checksummed, segmented log per session, and its projections.

A library on its own (it imports nothing else from Brain): `JournalWriter` appends batches
durably and recovers torn writes; `SessionReader` reads status, transcript and Event pages
without an actor; `fold` is the pure projection. docs/journal.md describes the disk format.
"""

from brain.journal.checkpoint import load_checkpoint
from brain.journal.errors import (
    CorruptJournal,
    InvalidRecord,
    JournalError,
    JournalLocked,
    JournalNotFound,
    WriterBroken,
)
from brain.journal.events import PUBLIC_RECORDS, RECORD_NAMES, rfc3339_ms, to_event
from brain.journal.projection import (
    FOLD_VERSION,
    Projection,
    ProjectionBuilder,
    empty_projection,
    fold,
    fold_all,
)
from brain.journal.reader import PAGE_BYTES, PAGE_EVENTS, SessionReader
from brain.journal.scan import JournalScan
from brain.journal.segments import list_segments
from brain.journal.timeline import Timeline, read_timeline
from brain.journal.writer import CHECKPOINT_NAME, DEFAULT_SEGMENT_BYTES, JournalWriter

__all__ = [
    "CHECKPOINT_NAME",
    "DEFAULT_SEGMENT_BYTES",
    "FOLD_VERSION",
    "PAGE_BYTES",
    "PAGE_EVENTS",
    "PUBLIC_RECORDS",
    "RECORD_NAMES",
    "CorruptJournal",
    "InvalidRecord",
    "JournalError",
    "JournalLocked",
    "JournalNotFound",
    "JournalScan",
    "JournalWriter",
    "Projection",
    "ProjectionBuilder",
    "SessionReader",
    "Timeline",
    "WriterBroken",
    "empty_projection",
    "fold",
    "fold_all",
    "list_segments",
    "load_checkpoint",
    "read_timeline",
    "rfc3339_ms",
    "to_event",
]
