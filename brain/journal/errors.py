"""The journal's exceptions: one base class, so callers can catch everything the library raises."""

from __future__ import annotations

from brain.journal.damage import describe


class JournalError(Exception):
    """Base class of every error this library raises on purpose."""


class CorruptJournal(JournalError):
    """The journal holds bytes that recovery may not repair: the session is `damaged`.

    Raised for a complete frame whose checksum fails, an incomplete frame at the end of a
    segment that is not the last, a sequence gap, or an unreadable segment header. It names
    the file, the byte offset and the sequence expected there, so an operator can find it.
    """

    def __init__(self, path: object, offset: int, seq: int | None, reason: str) -> None:
        self.path = str(path)
        self.offset = offset
        self.seq = seq
        self.reason = reason
        super().__init__(describe(self.path, offset, seq, reason))

    def __reduce__(self):  # keep it picklable across actor boundaries
        return (type(self), (self.path, self.offset, self.seq, self.reason))


class JournalNotFound(JournalError, FileNotFoundError):
    """There is no journal where one was expected (a reader never creates one)."""


class JournalLocked(JournalError):
    """Another writer holds this journal: a journal has exactly one writer at a time."""


class WriterBroken(JournalError):
    """A write or fdatasync failed: the on-disk state is unknown until the journal is reopened.

    After a failed fdatasync the kernel may have dropped the dirty pages, so retrying could
    acknowledge data that is not on disk; the writer refuses every further append instead.
    """


class InvalidRecord(JournalError, ValueError):
    """A record cannot be journaled or folded (no kind, not CBOR-encodable, bad delta)."""
