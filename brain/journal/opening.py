"""How a journal writer opens its journal: lock, recover, and check what it keeps open.

`JournalWriter.open` (writer.py) takes the directory's exclusive lock, removes files whose
creation never finished, replays the journal (or checks the history a valid checkpoint covers
with one CRC pass and replays only past it), truncates a torn write at the end of the last
segment, and makes what it accepted durable. `verify` repeats that CRC pass for a writer kept
open between commands, and `_reopen_unchanged` for a closed writer taken up again when nothing
was written since it closed. Anything else wrong raises `CorruptJournal`, naming the segment
and the offset of the first bad frame.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path
from typing import Any

from brain.fds import close_fd
from brain.journal.checkpoint import SeekPoint, load_valid_checkpoint, wants_seek_point
from brain.journal.errors import CorruptJournal, InvalidRecord, JournalError, JournalLocked
from brain.journal.frames import FRAME_HEADER_SIZE, SEGMENT_HEADER_SIZE
from brain.journal.history import SegmentDigest, digest_segments, history_mismatch
from brain.journal.projection import Projection, ProjectionBuilder
from brain.journal.scan import JournalScan, Torn
from brain.journal.segments import (
    TEMP_SUFFIX,
    Segment,
    create_segment,
    list_segments,
    segment_name,
)
from brain.journal.synced_mark import take_synced_mark
from brain.protocol.records import TRANSCRIPT_CHANGED

log = logging.getLogger("brain.journal")


class JournalOpening:
    """The opening half of JournalWriter: its state is the writer's (see writer.py)."""

    journal_dir: Path
    last_seq: int
    _fd: int | None
    _lock_fd: int | None
    _segment: int
    _size: int
    _allocated: int
    _last_at: int
    _last_frame: tuple[int, int, int] | None
    _transcript_length: int
    _index: list[SeekPoint]
    _history: list[SegmentDigest]
    _segment_crc: int
    _checkpoint_path: Path | None
    _since_checkpoint: tuple[int, int]
    _flushed: int
    opened: Projection | None
    history: Any

    def write_checkpoint(self, projection: Any) -> None:  # writer.py
        raise NotImplementedError

    @property
    def checkpoint_due(self) -> bool:  # writer.py
        raise NotImplementedError

    def _lock(self) -> None:
        fd = os.open(self.journal_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            close_fd(fd)
            raise JournalLocked(f"{self.journal_dir} is open in another writer") from None
        self._lock_fd = fd

    def _recover(self, project: bool = False, history_from: int | None = None) -> None:
        """`project`: also fold the projection through the last record into `opened`, so the
        writer's owner need not read the checkpoint and the tail a second time; with
        `history_from`, keep the Timeline from there (writer.py, `open`)."""
        for name in os.listdir(self.journal_dir):
            if name.endswith(".seg" + TEMP_SUFFIX):  # a segment whose creation never finished
                log.warning("journal %s: removing unfinished segment %s", self.journal_dir, name)
                os.unlink(self.journal_dir / name)
        if self._checkpoint_path is not None:
            folder, prefix = self._checkpoint_path.parent, self._checkpoint_path.name + ".tmp."
            for name in os.listdir(folder):  # (Path.glob cost ~5 % of a released turn's open)
                if name.startswith(prefix):  # a checkpoint write that never finished
                    (folder / name).unlink(missing_ok=True)
        segments = list_segments(self.journal_dir)
        start = None
        rebuild: ProjectionBuilder | None = None
        verified: tuple[SegmentDigest, ...] = ()
        distrusted = False  # a checkpoint whose covered history failed the CRC pass
        fold: ProjectionBuilder | None = ProjectionBuilder() if project else None
        why = "missing"
        if self._checkpoint_path is not None and segments:
            cp, start, why = load_valid_checkpoint(
                self.journal_dir, self._checkpoint_path, with_projection=project
            )
            if cp is not None and start is not None:
                mismatch = history_mismatch(segments, cp.history, cp.segment, start.offset)
                if mismatch is not None:
                    # Damage in the covered history, or a stale checkpoint: reading every
                    # frame tells which (and where), and the fold rebuilds the checkpoint.
                    cp, start, why, distrusted = None, None, f"unverified ({mismatch})", True
            if cp is not None and start is not None:
                verified = cp.history
                self._index = [p for p in cp.index if p.seq < start.seq]
                self._transcript_length = start.transcript_length
                self._last_frame = (cp.segment, cp.offset, cp.crc)
                self._last_at = cp.at
                if project:
                    fold = ProjectionBuilder(cp.projection)
            else:
                log.info(
                    "journal %s: checkpoint %s; rebuilding it from the journal",
                    self.journal_dir,
                    why,
                )
                rebuild = fold if fold is not None else ProjectionBuilder()
        elif fold is not None:
            rebuild = fold  # no checkpoint to use: the fold is the rebuild
        scan = JournalScan(self.journal_dir, start.cursor if start else None, segments=segments)
        try:
            self._replay(scan, rebuild or fold, history_from if project else None)
        except CorruptJournal as exc:
            if distrusted:
                self._drop_checkpoint(exc)
            raise
        if scan.torn is not None:
            self._truncate(scan.torn)
        if not segments:
            create_segment(self.journal_dir, 1)
            segments = list_segments(self.journal_dir)
        final = segments[-1]
        self._open_segment(final.first_seq, final.path)
        # A writer that died before its fdatasync may have left a batch that only the page
        # cache holds. Make what recovery accepted durable before anything is built on it,
        # unless the last writer closed healthy at exactly this size (synced_mark.py).
        synced = take_synced_mark(self._fd)
        if synced != self._allocated or scan.torn is not None:
            os.fdatasync(self._fd)
        if scan.unused:  # the zeros the last writer kept after its frames: written over next
            self._size = self._allocated - scan.unused
        self._flushed = self._size
        if (
            scan.end is not None
            and scan.end.segment == final.first_seq
            and scan.end.offset != self._size
        ):
            raise JournalError(
                f"{final.path}: size {self._size} after recovery, expected {scan.end.offset}"
            )
        digests = digest_segments(segments, verified, self._size)  # reads only what is new
        if digests[-1].length != self._size:
            raise JournalError(f"{final.path}: size changed during recovery")
        self._history, self._segment_crc = digests[:-1], digests[-1].crc
        if fold is not None:
            self.opened = fold.build()
        # A checkpoint that is there but unusable is replaced now; a missing one only when due
        # (a young session's whole journal replays faster than a checkpoint is written).
        due = self.checkpoint_due and history_from is None
        if rebuild is not None and self.last_seq > 0 and (why != "missing" or due):
            self.write_checkpoint(self.opened if fold is not None else rebuild.build())

    def _replay(self, scan: JournalScan, rebuild: ProjectionBuilder | None,
                history_from: int | None = None) -> None:
        """Read the frames recovery reads: the seek index, the last frame and time, and (when
        the checkpoint is being rebuilt) the fold of every record; with `history_from`, the
        Timeline from that sequence when the fold passes it."""
        length = self._transcript_length
        records, size = 0, 0
        kept: list[dict[str, Any]] | None = None
        for frame in scan:
            records += 1
            size += FRAME_HEADER_SIZE + frame.header.length
            record = frame.record
            if kept is None and frame.seq == history_from and rebuild is not None:
                kept = []
                self.history = (rebuild.build(), kept)
            if kept is not None:
                kept.append(record)
            if wants_seek_point(frame.seq, frame.offset, SEGMENT_HEADER_SIZE):
                self._index.append(SeekPoint(frame.seq, frame.segment, frame.offset, length))
            if record["kind"] == TRANSCRIPT_CHANGED:
                length = record["length"]
            if rebuild is not None:
                try:
                    rebuild.apply(record)
                except InvalidRecord as exc:
                    path = self.journal_dir / segment_name(frame.segment)
                    raise CorruptJournal(path, frame.offset, frame.seq, str(exc)) from None
            self._last_frame = (frame.segment, frame.offset, frame.header.payload_crc)
            self._last_at = record["at"]
        self._transcript_length = length
        self.last_seq = scan.last_seq
        self._since_checkpoint = (records, size)

    def verify(self, segments: list[Segment] | None = None) -> None:
        """Check, for a writer kept open between commands, that the journal still holds the
        bytes it verified and wrote: the same CRC pass as an open, over every segment, against
        the checksums this writer keeps. On a mismatch every frame is read to name the damage
        (`CorruptJournal`, and the checkpoint over it is removed, as an open does).
        `segments`: the journal's, when the caller has just listed them.
        """
        if segments is None:
            segments = list_segments(self.journal_dir)
        mine = [*self._history, SegmentDigest(self._segment, self._size, self._segment_crc)]
        mismatch = history_mismatch(segments, mine, self._segment, self._size)
        if mismatch is None:
            return
        try:
            for _frame in JournalScan(self.journal_dir, decode=False, segments=segments):
                pass
        except CorruptJournal as exc:
            if self._checkpoint_path is not None:
                self._drop_checkpoint(exc)
            raise
        raise JournalError(f"{self.journal_dir} changed under its writer ({mismatch})")

    def _reopen_unchanged(self) -> bool:
        """Take this closed writer up again, without a recovery, if its journal is exactly as it
        left it: True, locked and open for appends; False, locked by nothing it holds.

        "Exactly" is checked, not assumed: the same segments; the last one of the size it
        was closed at and tagged by its own close (synced_mark.py), so no writer since died
        mid-write; zeros after its frames, so no writer since appended into the room; and the
        CRC pass of `verify` over every byte of history. Any other writer (a web worker
        admitting a turn, another actor) changes one of these, and the caller opens as usual.
        """
        try:
            self._lock()
        except JournalLocked:
            return False
        try:
            segments = list_segments(self.journal_dir)
            mine = [d.segment for d in self._history] + [self._segment]
            if [s.first_seq for s in segments] != mine:
                raise _Changed
            path = segments[-1].path
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
            self._fd = fd
            if os.fstat(fd).st_size != self._allocated or take_synced_mark(fd) != self._allocated:
                raise _Changed
            if not _zeros(path, self._size, self._allocated - self._size):
                raise _Changed
            self.verify(segments)
        except (_Changed, JournalError, OSError):
            self._release_after_reopen()
            return False
        self._flushed = self._size
        return True

    def _release_after_reopen(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                close_fd(fd)
        self._fd = self._lock_fd = None

    def _drop_checkpoint(self, damage: CorruptJournal) -> None:
        """Remove a checkpoint whose covered history is refused. It is a cache of history that
        no longer reads; without it every reader replays from the start and meets the damage,
        so the session reads as damaged everywhere, as the writer found it."""
        assert self._checkpoint_path is not None
        log.warning(
            "journal %s: removing checkpoint %s, which covers refused history (%s)",
            self.journal_dir,
            self._checkpoint_path,
            damage,
        )
        self._checkpoint_path.unlink(missing_ok=True)

    def _truncate(self, torn: Torn) -> None:
        log.warning(
            "journal %s: truncating torn write at %s offset %d (sequence %d, %s; "
            "%d bytes dropped)",
            self.journal_dir,
            torn.path.name,
            torn.offset,
            torn.seq,
            torn.reason,
            torn.size - torn.offset,
        )
        fd = os.open(torn.path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, torn.offset)
            os.fsync(fd)
        finally:
            close_fd(fd)

    def _open_segment(self, first_seq: int, path: Path) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)  # the writer writes at its own offsets
        if self._fd is not None:
            close_fd(self._fd)
        self._fd = fd
        self._segment = first_seq
        self._size = self._allocated = os.fstat(fd).st_size


class _Changed(Exception):
    """The journal is not as a closed writer left it (`_reopen_unchanged`)."""


def _zeros(path: Path, offset: int, length: int) -> bool:
    """Whether `path` holds only zero bytes in [offset, offset + length)."""
    if length <= 0:
        return True
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.pread(fd, length, offset)
    finally:
        close_fd(fd)
    return len(data) == length and data.count(0) == length
