"""The one scanner every open, read and verify uses: frames in order, by the recovery rules.

Apart from the segment store (segments.py) because it is where the recovery rules live
(docs/journal.md, "Recovery rules"), and they are the journal's most careful code: it reads
frames in order and yields only frames of *complete* batches. It raises `CorruptJournal` for
what may never be repaired: a complete frame whose checksum fails, an incomplete frame or
unfinished batch at the end of a segment that is not the last, a sequence gap, a bad segment
header. Where the last segment merely stops early (a torn write), it stops and reports the
offset of the batch that tore; only `JournalWriter.open` acts on that report, by truncating.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain.fds import close_fd
from brain.journal.errors import CorruptJournal, JournalError
from brain.journal.frames import (
    FLAG_END_OF_BATCH,
    FRAME_HEADER_SIZE,
    SEGMENT_HEADER_SIZE,
    FrameHeader,
    crc32c,
    decode_record,
    decode_segment_header,
    unpack_frame_header,
)
from brain.journal.segments import Cursor, Segment, list_segments, segment_name

READ_CHUNK = 1 << 20
SECTOR = 512
MIN_ZERO_RUN = 16


class Frame:
    """One checked frame: where it is, its header fields, its payload and (when the scan
    decodes) its record. A plain slotted class: the scanner makes one per frame read."""

    __slots__ = ("segment", "offset", "seq", "flags", "payload_crc", "payload", "record")

    def __init__(
        self,
        segment: int,
        offset: int,
        seq: int,
        flags: int,
        payload_crc: int,
        payload: bytes,
        record: dict[str, Any] | None = None,
    ) -> None:
        self.segment = segment
        self.offset = offset
        self.seq = seq
        self.flags = flags
        self.payload_crc = payload_crc
        self.payload = payload
        self.record = record

    @property
    def header(self) -> FrameHeader:
        return FrameHeader(len(self.payload), self.flags, self.seq, self.payload_crc)

    @property
    def end_of_batch(self) -> bool:
        return bool(self.flags & FLAG_END_OF_BATCH)

    @property
    def size(self) -> int:
        return FRAME_HEADER_SIZE + len(self.payload)

    @property
    def end(self) -> int:
        return self.offset + FRAME_HEADER_SIZE + len(self.payload)

    def __repr__(self) -> str:
        return f"<Frame seq={self.seq} segment={self.segment} offset={self.offset}>"


@dataclass(frozen=True, slots=True)
class Torn:
    """An unfinished write at the end of the last segment: truncate `path` to `offset`."""

    path: Path
    offset: int
    seq: int
    reason: str
    size: int


def _zero_run_start(fd: int, pos: int, size: int) -> int:
    """The smallest offset z >= pos such that every byte in [z, size) is zero."""
    end = size
    while end > pos:
        start = max(pos, end - READ_CHUNK)
        chunk = os.pread(fd, end - start, start)
        stripped = chunk.rstrip(b"\0")
        if stripped:
            return start + len(stripped)
        end = start
    return pos


def _zeroed_within(zero_from: int, pos: int, limit: int, size: int, min_run: int) -> bool:
    """Whether, from some sector boundary b with pos <= b < limit, the file reads as zeros to
    its end (at least `min_run` bytes unless b == pos), given `zero_from`, where its trailing
    zeros start. That is the mark a crash leaves when a file's size reached the disk before all
    of its data did: whole sectors of zeros at the end. A live writer copying a batch over the
    room (writer.py) leaves it too while it pauses between pages; a reader that meets the copy
    inside a page finds the bytes changed when it reads them again (`_rewritten`).

    Only from a sector boundary: a committed frame that fails its checksum and merely ends in a
    zero byte, before the room's zeros, is damage, not a torn write.
    """
    if zero_from <= pos:
        return True
    boundary = -(-zero_from // SECTOR) * SECTOR
    return boundary < limit and size - boundary >= min_run


def _rewritten(fd: int, pos: int, seen: bytes) -> bool:
    """Whether the bytes at `pos` are no longer `seen`: a writer is copying a batch over the
    room (writer.py). Asked after the zero test, which read the file later than `seen`: a copy
    runs forward, so if these bytes did not change, nothing after them did before that test.
    Damage does not move; a write in progress does."""
    return os.pread(fd, len(seen), pos) != seen


class JournalScan:
    """Iterate the frames of complete batches from `start` (or the first segment) to the end.

    After iteration: `last_seq`, `end` (cursor after the last complete batch), `torn` (a
    `Torn` when the last segment ends in an unfinished write, else None), `unused` (zeros
    after the last batch of the last segment, the room a writer keeps), and counters.
    `decode=True` also decodes each payload into `frame.record` (checked against its header).
    The scanner never writes: it is safe beside a writer in another process, because bytes
    of a batch the writer has not finished are, to it, simply not there yet.
    """

    def __init__(
        self,
        journal_dir: Path,
        start: Cursor | None = None,
        *,
        decode: bool = True,
        segments: list[Segment] | None = None,
    ) -> None:
        self.journal_dir = Path(journal_dir)
        self.start = start
        self.decode = decode
        self.segments = list_segments(self.journal_dir) if segments is None else segments
        self.last_seq = start.seq - 1 if start else 0
        self.end: Cursor | None = start
        self.torn: Torn | None = None
        self.unused = 0  # bytes of zeros after the last batch of the last segment (writer.py)
        self.frames = 0
        self.batches = 0
        self.bytes = 0
        self.segments_read: list[Segment] = []
        self.final_size: int | None = None

    def __iter__(self) -> Iterator[Frame]:
        segments = self.segments
        start = self.start
        if start is not None:
            segments = [s for s in segments if s.first_seq >= start.segment]
            if not segments or segments[0].first_seq != start.segment:
                raise JournalError(f"segment {segment_name(start.segment)} is gone")
        expected = start.seq if start else 1
        for index, segment in enumerate(segments):
            final = index == len(segments) - 1
            offset = start.offset if (start and index == 0) else None
            yield from self._segment(segment, offset, expected, final)
            expected = self.last_seq + 1

    def _segment(
        self, segment: Segment, offset: int | None, expected: int, final: bool
    ) -> Iterator[Frame]:
        path = segment.path
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            if final:
                self.final_size = size
            self.segments_read.append(segment)
            first_seq, reason = decode_segment_header(os.pread(fd, SEGMENT_HEADER_SIZE, 0))
            if reason is not None:
                raise CorruptJournal(path, 0, expected, reason)
            if first_seq != segment.first_seq:
                raise CorruptJournal(
                    path, 0, expected, f"segment header says it starts at {first_seq}"
                )
            if offset is not None and offset > size:
                raise JournalError(f"{path}: position {offset} is past its end ({size} bytes)")
            if offset is None:
                if first_seq != expected:
                    raise CorruptJournal(
                        path,
                        0,
                        expected,
                        f"sequence gap: segment starts at {first_seq}, expected {expected}",
                    )
                offset = SEGMENT_HEADER_SIZE
            yield from self._frames(fd, path, segment.first_seq, size, offset, expected, final)
        finally:
            close_fd(fd)

    def _frames(
        self, fd: int, path: Path, segment: int, size: int, pos: int, expected: int, final: bool
    ) -> Iterator[Frame]:
        # The hot loop of every open and every page read: names are local, and headers are
        # checked as plain tuples, without a FrameHeader per frame.
        buf = b""
        buf_at = pos
        batch: list[Frame] = []
        batch_start = pos
        decode = self.decode
        hsize = FRAME_HEADER_SIZE
        unpack, checksum = unpack_frame_header, crc32c
        problem = None
        while pos != size:
            if size - pos < hsize:
                problem = ("incomplete", f"incomplete frame header ({size - pos} bytes)")
                break
            rel = pos - buf_at
            if rel + hsize > len(buf):
                buf = os.pread(fd, max(READ_CHUNK, hsize), pos)
                buf_at, rel = pos, 0
                if len(buf) < hsize:  # the file shrank under us: a concurrent truncation
                    problem = ("incomplete", "file shrank while reading")
                    break
            fields = unpack(buf, rel)
            if fields is None:
                zero_from = _zero_run_start(fd, pos, size)
                if zero_from <= pos and not batch:
                    problem = ("unused", "zeros after the last batch")
                elif _zeroed_within(zero_from, pos, pos + hsize, size, 1):
                    problem = ("incomplete", "zero-filled tail")
                elif _rewritten(fd, pos, buf[rel:rel + hsize]):
                    problem = ("incomplete", "a batch being written")
                else:
                    problem = ("corrupt", "frame header checksum mismatch")
                break
            length, flags, seq, payload_crc = fields
            if seq != expected:
                problem = ("corrupt", f"sequence gap: expected {expected}, found {seq}")
                break
            end = pos + hsize + length
            if end > size:
                problem = (
                    "incomplete",
                    f"incomplete frame ({length}-byte payload, {size - pos - hsize} present)",
                )
                break
            if end - buf_at > len(buf):
                buf = os.pread(fd, max(READ_CHUNK, end - pos), pos)
                buf_at, rel = pos, 0
                if len(buf) < end - pos:
                    problem = ("incomplete", "file shrank while reading")
                    break
            payload = buf[rel + hsize : rel + hsize + length]
            if checksum(payload) != payload_crc:
                if _zeroed_within(_zero_run_start(fd, pos, size), pos, end, size, MIN_ZERO_RUN):
                    problem = ("incomplete", "torn frame (zeroed sector)")
                elif _rewritten(fd, pos, buf[rel:rel + hsize + length]):
                    problem = ("incomplete", "a batch being written")
                else:
                    problem = ("corrupt", "payload checksum mismatch")
                break
            frame = Frame(segment, pos, seq, flags, payload_crc, payload)
            if decode:
                record = decode_record(payload)
                if record is None or record["seq"] != seq:
                    problem = ("corrupt", "checksummed payload is not a valid record")
                    break
                frame.record = record
            batch.append(frame)
            pos = end
            expected += 1
            if flags & FLAG_END_OF_BATCH:
                self.frames += len(batch)
                self.batches += 1
                self.bytes += pos - batch_start
                self.last_seq = expected - 1
                self.end = Cursor(segment, pos, expected)
                yield from batch
                batch = []
                batch_start = pos
        if problem is None and batch:
            problem = ("incomplete", "segment ends inside a batch")
        if self.end is None or self.end.segment != segment:
            self.end = Cursor(segment, batch_start, self.last_seq + 1)
        if problem is None:
            return
        kind, reason = problem
        if kind == "unused" and final:
            self.unused = size - pos  # a writer's room for its next batches: nothing to repair
            return
        if kind == "corrupt":
            raise CorruptJournal(path, pos, expected, reason)
        if not final:
            raise CorruptJournal(
                path, pos, expected, f"{reason} at the end of a segment that is not the last"
            )
        self.torn = Torn(path, batch_start, self.last_seq + 1, reason, size)


def journal_records(journal_dir: Path) -> Iterator[dict[str, Any]]:
    """The records of the journal in `journal_dir`, in order, by the same rules as the scan."""
    for frame in JournalScan(journal_dir):
        yield frame.record
