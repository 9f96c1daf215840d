"""The journal writer: the only code that appends, rolls segments or truncates a torn tail.

One writer per journal (an exclusive `flock` on the journal directory enforces it). `append`
turns a list of records into one batch: one write and one `fdatasync`, the last frame flagged
as the end of the batch, so a batch is either wholly committed or, after a crash, wholly
dropped. A failed write or fdatasync poisons the writer (see `WriterBroken`). How it opens a
journal (lock, recovery, the CRC pass of `verify`) is in opening.py; what makes a list of
records a batch (sequences, time, transcript deltas that apply) is in batch.py.

The last segment keeps written zeros after its frames (`ROOM_BYTES`, its room), and each batch
is written over them. An `fdatasync` after a write that makes the file longer must also commit
the new size in the file system's own journal; one after a write into bytes already on disk
need not: a commit took 0.37–0.38 ms against 0.46 ms appending, measured in a running server.
The room stays when the writer closes (under the default release policy the session's next
turn opens it again) and is cut off before a roll, so only the last segment has one; readers
and recovery tell it from history (scan.py).
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import google_crc32c

from brain.durable_dirs import make_dirs_durable
from brain.fds import close_fd
from brain.journal.batch import length_before, number_batch
from brain.journal.checkpoint import (
    INDEX_STRIDE,
    Checkpoint,
    SeekPoint,
    write_checkpoint,
)
from brain.journal.errors import JournalError, WriterBroken
from brain.journal.fault_hook import armed_fdatasync
from brain.journal.frames import (
    FRAME_HEADER_SIZE,
    SEGMENT_HEADER_SIZE,
    crc32c,
    encode_batch,
    encode_segment_header,
    record_encoder,
)
from brain.journal.history import SegmentDigest
from brain.journal.opening import JournalOpening
from brain.journal.projection import Projection
from brain.journal.segments import create_segment, segment_name
from brain.journal.synced_mark import mark_synced

log = logging.getLogger("brain.journal")

DEFAULT_SEGMENT_BYTES = 64 << 20
ROOM_BYTES = 16 << 10
"""Zeros written ahead at a time after the last segment's frames: a text turn writes ~3 KiB."""
MIN_SLACK_BYTES = 512
"""Zeros always left after a batch: a reader that meets a batch still being copied in sees it
end in zeros (scan.py, the torn-write rules)."""
CHECKPOINT_NAME = "checkpoint"
CHECKPOINT_RECORDS = 64
CHECKPOINT_BYTES = 256 << 10
"""A checkpoint is due once this many records, or bytes of frames, were committed after the
one on disk: an open then replays at most about that much (~4 us a record), where writing a
checkpoint after every turn cost a whole-projection encode and two fsyncs each time."""
_DEFAULT = object()
_extend_crc = google_crc32c.extend
_live_writers: weakref.WeakSet[JournalWriter] = weakref.WeakSet()
_test_fdatasync = armed_fdatasync()  # None unless a test armed the hook (fault_hook.py)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class JournalWriter(JournalOpening):
    """Appends batches of records to one journal directory. Create it with `open`.

    Not thread-safe: one thread (the session actor's) appends; readers use `SessionReader`.
    """

    def __init__(self) -> None:  # use JournalWriter.open
        self.journal_dir: Path
        self.segment_bytes: int
        self.last_seq = 0
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._segment = 0
        self._size = 0  # where the open segment's frames end
        self._allocated = 0  # the open segment file's size: _size and the zeros after it
        self._last_at = 0
        self._last_frame: tuple[int, int, int] | None = None  # segment, offset, payload crc
        self._transcript_length = 0
        self._index: list[SeekPoint] = []
        self._history: list[SegmentDigest] = []  # CRC32C of each closed segment's bytes
        self._segment_crc = 0  # CRC32C of the open segment's bytes [0, _size)
        self._broken: BaseException | None = None
        self._clock: Callable[[], int] = _now_ms
        self._checkpoint_path: Path | None = None
        self._flushed = -1  # bytes of the open segment known flushed (-1: not yet)
        self._since_checkpoint = (0, 0)  # records, frame bytes committed after the checkpoint
        self.opened: Projection | None = None  # the projection at open, when asked for
        self.history: Any = None  # the Timeline from `history_from`, when asked for
        self._encode = record_encoder()  # this writer's thread only, like the writer

    # --- open and recovery ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        journal_dir: str | os.PathLike[str],
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        *,
        checkpoint_path: Any = _DEFAULT,
        clock: Callable[[], int] | None = None,
        project: bool = False,
        history_from: int | None = None,
    ) -> JournalWriter:
        """Open (creating if missing) a journal, recover it, and return its writer.

        Recovery: a torn write at the end of the last segment is truncated (and logged);
        anything else wrong raises `CorruptJournal`, naming the segment and offset of the
        first bad frame, wherever it is. `checkpoint_path` (default: `checkpoint` beside the
        journal directory, None for none) spares decoding the history it covers, which is
        verified by one CRC pass over its segment bytes instead (see `history.py`); it is
        rebuilt from the journal when it is damaged or stale, and when it is missing once it is
        due (`checkpoint_due`). `project=True` also leaves the projection through the last
        record in `opened`, folded in the same pass. `history_from` (with `project`) also
        leaves in `history` the projection through `history_from - 1` and every record from
        it on (a `Timeline`), when the fold passes it (None when the checkpoint is newer);
        such an open writes no checkpoint that is merely due: the journal is mid-turn.
        """
        if segment_bytes < SEGMENT_HEADER_SIZE + FRAME_HEADER_SIZE:
            raise ValueError("segment_bytes is too small")
        self = cls()
        self.journal_dir = Path(journal_dir)
        self.segment_bytes = segment_bytes
        self._clock = clock or _now_ms
        if checkpoint_path is _DEFAULT:
            checkpoint_path = self.journal_dir.parent / CHECKPOINT_NAME
        self._checkpoint_path = Path(checkpoint_path) if checkpoint_path is not None else None
        make_dirs_durable(self.journal_dir)
        self._lock()
        try:
            self._recover(project, history_from)
        except BaseException:
            self.close()
            raise
        _live_writers.add(self)
        return self

    def reopen(self) -> bool:
        """Take this writer up again after `close`, if nothing touched its journal since: the
        lock and the segment again, and the CRC pass `verify` makes, instead of an open's
        recovery (~0.05 against ~0.75 ms for a session of a hundred turns). False when the
        journal changed or is locked, or the writer failed: then `open` it as usual."""
        if self._fd is not None or self._broken is not None or self._lock_fd is not None:
            return False
        if not self._reopen_unchanged():
            return False
        self.opened = self.history = None
        _live_writers.add(self)
        return True

    # --- appending -----------------------------------------------------------------------------

    def append(
        self, records: list[dict[str, Any]], *, at: int | None = None
    ) -> list[dict[str, Any]]:
        """Commit `records` as one batch; return them as committed (with `seq` and `at`).

        Durable when this returns: one write and one fdatasync. Either every record of the
        batch survives a crash or none does. `at` (epoch ms) is the batch's time when the
        caller chose it (never earlier than the last record's); by default, the clock's.
        """
        if self._broken is not None:
            raise WriterBroken(f"{self.journal_dir}: an earlier write failed; reopen the journal")
        if self._fd is None:
            raise JournalError(f"{self.journal_dir}: the writer is closed")
        if not records:
            return []
        at = max(self._clock() if at is None else at, self._last_at)
        first = self.last_seq + 1
        committed, length = number_batch(records, first, at, self._transcript_length)
        data, offsets, last_crc = encode_batch(committed, self._encode)
        if self._size > SEGMENT_HEADER_SIZE and self._size + len(data) > self.segment_bytes:
            self._roll(first)
        base = self._size
        try:
            if base + len(data) + MIN_SLACK_BYTES > self._allocated:
                self._make_room(base + len(data))
            _write_at(self._fd, data, base)
            if _test_fdatasync is None:
                os.fdatasync(self._fd)
            else:
                _test_fdatasync(self._fd, self.journal_dir)
        except OSError as exc:
            self._broken = exc
            _drop_unsynced(self._fd, base, self.journal_dir)
            raise WriterBroken(
                f"{self.journal_dir}: write failed ({exc}); the journal must be reopened"
            ) from exc
        self._segment_crc = _extend_crc(self._segment_crc, data)
        self._add_seek_points(committed, first, base, offsets)
        self._last_frame = (self._segment, base + offsets[-1], last_crc)
        self._size = self._flushed = base + len(data)
        self.last_seq = first + len(committed) - 1
        self._last_at = at
        self._transcript_length = length
        records_since, bytes_since = self._since_checkpoint
        self._since_checkpoint = (records_since + len(committed), bytes_since + len(data))
        return committed

    def _add_seek_points(
        self, committed: list[dict[str, Any]], first: int, base: int, offsets: list[int]
    ) -> None:
        """Index the frames that start a stride of INDEX_STRIDE sequences (found by
        arithmetic, not a test per frame) and a frame that starts a segment."""
        wanted: range | list[int] = range(-(first - 1) % INDEX_STRIDE, len(offsets), INDEX_STRIDE)
        if base == SEGMENT_HEADER_SIZE and 0 not in wanted:
            wanted = [0, *wanted]
        for i in wanted:
            before = length_before(committed, i, self._transcript_length)
            self._index.append(SeekPoint(first + i, self._segment, base + offsets[i], before))

    def _make_room(self, end: int) -> None:
        """Write zeros after `end`, flushed with the batch that needed them."""
        target = max(end + MIN_SLACK_BYTES, min(end + ROOM_BYTES, self.segment_bytes))
        _write_at(self._fd, bytes(target - self._allocated), self._allocated)
        self._allocated = target

    def _roll(self, first_seq: int) -> None:
        closed = SegmentDigest(self._segment, self._size, self._segment_crc)
        try:
            if self._allocated > self._size:
                # Cut, durably, before the next segment exists: only the last one may end in
                # zeros (recovery refuses them anywhere else).
                os.ftruncate(self._fd, self._size)
                os.fdatasync(self._fd)
                self._allocated = self._size
            path = create_segment(self.journal_dir, first_seq)
            self._open_segment(first_seq, path)
            self._flushed = self._size  # create_segment flushed its header
            self._history.append(closed)
            self._segment_crc = crc32c(encode_segment_header(first_seq))
        except OSError as exc:
            self._broken = exc
            raise WriterBroken(
                f"{self.journal_dir}: could not start segment {segment_name(first_seq)}: {exc}"
            ) from exc

    # --- checkpoint ----------------------------------------------------------------------------

    @property
    def checkpoint_due(self) -> bool:
        """Whether enough was committed since the checkpoint on disk to write a new one."""
        records_since, bytes_since = self._since_checkpoint
        return records_since >= CHECKPOINT_RECORDS or bytes_since >= CHECKPOINT_BYTES

    @property
    def broken(self) -> bool:
        """Whether a write failed: the writer takes no more and must not be taken up again."""
        return self._broken is not None

    @property
    def journal_bytes(self) -> int:
        """The bytes of frames in every segment, as this writer knows them."""
        return sum(d.length for d in self._history) + self._size

    @property
    def records_since_checkpoint(self) -> int:
        return self._since_checkpoint[0]

    def write_checkpoint(self, projection: Projection) -> None:
        """Save `projection` (which must be folded through `last_seq`) as the checkpoint.

        Call it when `checkpoint_due`, not per commit: it is a whole-file rewrite with two
        fsyncs. It is a cache; losing it costs only a replay.
        """
        if self._checkpoint_path is None or self.last_seq == 0:
            return
        if projection.last_seq != self.last_seq:
            raise JournalError(
                f"projection is at {projection.last_seq}, the journal at {self.last_seq}"
            )
        if len(projection.transcript) != self._transcript_length:
            raise JournalError("projection transcript disagrees with the journal")
        assert self._last_frame is not None
        segment, offset, crc = self._last_frame
        cp = Checkpoint(
            self.last_seq,
            segment,
            offset,
            crc,
            self._last_at,
            self._transcript_length,
            tuple(self._index),
            None,
            (*self._history, SegmentDigest(self._segment, self._size, self._segment_crc)),
        )
        write_checkpoint(self._checkpoint_path, cp, projection)
        self._since_checkpoint = (0, 0)

    # --- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the segment and the lock. Idempotent. A healthy writer tags the segment as
        flushed through its size, which spares the next open a flush (synced_mark.py)."""
        if self._fd is not None:
            if self._broken is None and self._flushed == self._size:
                mark_synced(self._fd, self._allocated)  # the zeros were flushed with a batch
            close_fd(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            close_fd(self._lock_fd)  # closing the last descriptor releases the flock
            self._lock_fd = None
        _live_writers.discard(self)

    def _forget_after_fork(self) -> None:
        # A forked child must neither write through, nor keep alive the lock of, its parent's
        # writer: close its copies (the parent's descriptors and lock are unaffected).
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                try:
                    close_fd(fd)
                except OSError:
                    pass
        self._fd = self._lock_fd = None
        self._broken = JournalError("writer inherited across fork")

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<JournalWriter {self.journal_dir} last_seq={self.last_seq}>"


def _drop_unsynced(fd: int, base: int, journal_dir: Path) -> None:
    """Cut a batch whose write or fdatasync failed off the segment, page cache included.

    After a failed fdatasync the kernel may already have dropped the dirty pages while the
    page cache still shows the bytes (the PostgreSQL fsync lesson): they must never become
    history, neither for a reader now nor for the recovery of the next open. The fdatasync
    after the cut is not a retry of the failed one: it only makes the cut itself durable,
    and if it fails too, recovery still sees at most a batch nobody was told was committed.
    """
    try:
        os.ftruncate(fd, base)
        os.fdatasync(fd)
    except OSError as exc:
        log.error("%s: could not cut the failed batch at byte %d: %s", journal_dir, base, exc)


def _write_at(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def _after_fork_in_child() -> None:
    for writer in list(_live_writers):
        writer._forget_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
