"""The checkpoint: a disposable, checksummed cache of the projection through one sequence.

Layout of `sessions/{id}/checkpoint` (little endian)::

    magic "BRAINCKP" (8) | version u16 | reserved u16 | meta_len u32 | body_len u32
    | meta_crc u32 | body_crc u32 | header_crc u32          (32-byte header)
    meta (CBOR)   {fold_version, seq, segment, offset, crc, at, core_length, transcript_length,
                   index, history}
    body          CBOR of the Projection without transcript and kv (core_length bytes),
                  then CBOR of [transcript, kv], the transcript as the UTF-8 bytes of its JSON
                  array (a CBOR array only if JSON cannot hold it)

`seq`/`segment`/`offset`/`crc` name the frame of the last folded record: its segment, byte
offset and payload CRC. A checkpoint is used only if that exact frame is still there, so a
journal that was truncated, replaced or rewritten makes it stale. `index` holds seek points
`[seq, segment, offset, transcript_length_before]` so event pages start near their cursor
without reading the whole journal. `history` holds `[segment, length, crc]`, the CRC32C of
every covered segment's bytes up to the end of that frame (see `history.py`), so a writer open
verifies the covered history in one CRC pass. Meta and body have separate checksums so a page
read can use the index without decoding the (possibly large) projection, and the body's core
comes first so a status read need not decode the transcript. The transcript is kept as JSON
text because that is the form a turn hands to its Agentloop: a projection loaded from here
remembers it (`transcript_text.py`), and only messages added since are encoded again.

The file is replaced atomically (temp file, fsync, rename, directory fsync). Nothing here is
ever trusted over the journal: any doubt means "rebuild".
"""

from __future__ import annotations

import logging
import os
import struct
import sys
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cbor2

from brain.durable_dirs import PRIVATE_FILE_MODE
from brain.fds import close_fd
from brain.journal.frames import FRAME_HEADER_SIZE, crc32c
from brain.journal.history import SegmentDigest
from brain.journal.projection import FOLD_VERSION, Projection
from brain.journal.segments import (
    Cursor,
    frame_is_whole,
    fsync_dir,
    read_frame_header,
    segment_name,
)
from brain.journal.transcript_text import TranscriptList, decode_messages, messages_text

log = logging.getLogger("brain.journal")

CHECKPOINT_MAGIC = b"BRAINCKP"
CHECKPOINT_VERSION = 2  # 2: the transcript as JSON text
_HEADER = struct.Struct("<8sHHIIIII")
HEADER_SIZE = _HEADER.size  # 32
INDEX_STRIDE = 64


@dataclass(frozen=True)
class SeekPoint:
    """A frame boundary where reading may begin, with the transcript length before it."""

    seq: int
    segment: int
    offset: int
    transcript_length: int

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.segment, self.offset, self.seq)


@dataclass(frozen=True)
class Checkpoint:
    seq: int
    segment: int
    offset: int
    crc: int
    at: int
    transcript_length: int
    index: Sequence[SeekPoint]
    projection: Projection | None  # None when loaded without the body
    history: tuple[SegmentDigest, ...] = ()  # empty in a checkpoint of an older Brain

    def resume_point(self, frame_length: int) -> SeekPoint:
        end = self.offset + FRAME_HEADER_SIZE + frame_length
        return SeekPoint(self.seq + 1, self.segment, end, self.transcript_length)


def encode_checkpoint(cp: Checkpoint, projection: Projection) -> bytes:
    plain = projection.to_dict()
    content = cbor2.dumps([_transcript_form(plain.pop("transcript")), plain.pop("kv")])
    core = cbor2.dumps(plain)
    body = core + content
    meta = cbor2.dumps({
        "fold_version": FOLD_VERSION, "seq": cp.seq, "segment": cp.segment,
        "offset": cp.offset, "crc": cp.crc, "at": cp.at, "core_length": len(core),
        "transcript_length": cp.transcript_length, "index": _pack_index(cp.index),
        "history": [list(digest) for digest in cp.history],
    })  # fmt: skip
    head = _HEADER.pack(
        CHECKPOINT_MAGIC, CHECKPOINT_VERSION, 0, len(meta), len(body), crc32c(meta), crc32c(body), 0
    )[:-4]
    return head + struct.pack("<I", crc32c(head)) + meta + body


def _transcript_form(transcript: list[Any]) -> bytes | list[Any]:
    """The transcript as its JSON text, or as itself when JSON cannot hold it. A TranscriptList
    remembers the whole text from now on (a resident session's next turns encode less)."""
    try:
        text = messages_text(transcript)
    except (TypeError, ValueError):
        return transcript
    if isinstance(transcript, TranscriptList):
        transcript.remember(text)
    return text.encode("utf-8")


def _transcript_of(form: bytes | list[Any]) -> list[Any]:
    if isinstance(form, bytes):
        return decode_messages(form.decode("utf-8"))
    if isinstance(form, list):
        return form
    raise ValueError("the transcript is neither JSON text nor an array")


def write_checkpoint(path: Path, cp: Checkpoint, projection: Projection) -> None:
    """Replace the checkpoint atomically; a crash leaves the old one or the new one."""
    data = encode_checkpoint(cp, projection)
    temp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                 PRIVATE_FILE_MODE)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fdatasync(fd)
        finally:
            close_fd(fd)
    except BaseException:
        # A full disk (or a failed fdatasync) must not also keep a torn copy holding space.
        temp.unlink(missing_ok=True)
        raise
    os.replace(temp, path)
    fsync_dir(path.parent)


def _read(path: Path, meta_only: bool) -> bytes:
    """The whole file, or (meta_only) just its header and meta section."""
    if not meta_only:
        return path.read_bytes()
    with open(path, "rb") as src:
        head = src.read(HEADER_SIZE)
        if len(head) < HEADER_SIZE:
            return head
        meta_len = _HEADER.unpack_from(head)[3]
        return head + src.read(meta_len)


def load_checkpoint(
    path: Path, *, with_projection: bool = True, meta_only: bool = False, content: bool = True
) -> tuple[Checkpoint | None, str]:
    """`(checkpoint, "")`, or `(None, why not)` when it is missing or damaged.

    `with_projection=False` skips decoding the body (its checksum is still verified);
    `meta_only=True` reads only the header and meta, for a reader that needs the seek index;
    `content=False` leaves the transcript and kv out (empty), for a status read.
    """
    try:
        data = _read(path, meta_only)
    except FileNotFoundError:
        return None, "missing"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    if len(data) < HEADER_SIZE:
        return None, "damaged (short header)"
    magic, version, _r, meta_len, body_len, meta_crc, body_crc, head_crc = _HEADER.unpack_from(data)
    if crc32c(data[: HEADER_SIZE - 4]) != head_crc or magic != CHECKPOINT_MAGIC:
        return None, "damaged (header checksum)"
    if version != CHECKPOINT_VERSION:
        return None, f"stale (checkpoint version {version})"
    if len(data) != HEADER_SIZE + meta_len + (0 if meta_only else body_len):
        return None, "damaged (length)"
    meta_bytes = data[HEADER_SIZE : HEADER_SIZE + meta_len]
    if crc32c(meta_bytes) != meta_crc:
        return None, "damaged (meta checksum)"
    try:
        meta = cbor2.loads(meta_bytes)
        if meta["fold_version"] != FOLD_VERSION:
            return None, f"stale (fold version {meta['fold_version']})"
        index = SeekIndex(meta["index"])
        projection = None
        body = data[HEADER_SIZE + meta_len :]
        if not meta_only and crc32c(body) != body_crc:
            return None, "damaged (body checksum)"
        if with_projection and not meta_only:
            core_length = meta["core_length"]
            plain = cbor2.loads(body[:core_length])
            if content:
                transcript, plain["kv"] = cbor2.loads(body[core_length:])
                plain["transcript"] = _transcript_of(transcript)
            else:
                plain["transcript"], plain["kv"] = [], {}
            projection = Projection.from_dict(plain)
            if projection.last_seq != meta["seq"]:
                return None, "damaged (projection does not match its sequence)"
        cp = Checkpoint(
            int(meta["seq"]),
            int(meta["segment"]),
            int(meta["offset"]),
            int(meta["crc"]),
            int(meta["at"]),
            int(meta["transcript_length"]),
            index,
            projection,
            tuple(SegmentDigest(*map(int, d)) for d in meta.get("history", ())),
        )
    except Exception as exc:  # a checksummed but unreadable body: treat as damaged
        return None, f"damaged ({type(exc).__name__})"
    return cp, ""


def resume_cursor(journal_dir: Path, cp: Checkpoint) -> tuple[SeekPoint | None, str]:
    """Where reading continues after the checkpoint, or `(None, why)` when it is stale:
    the frame it names must still be there, whole, with the same sequence and checksum, and
    end a batch."""
    path = journal_dir / segment_name(cp.segment)
    header = read_frame_header(path, cp.offset)
    if header is None:
        return None, "stale (its last frame is not in the journal)"
    if header.seq != cp.seq or header.payload_crc != cp.crc or not header.end_of_batch:
        return None, "stale (journal position does not match)"
    if not frame_is_whole(path, cp.offset, header):
        return None, "stale (its last frame is no longer whole)"
    return cp.resume_point(header.length), ""


def load_valid_checkpoint(
    journal_dir: Path,
    path: Path,
    *,
    with_projection: bool = True,
    meta_only: bool = False,
    content: bool = True,
) -> tuple[Checkpoint | None, SeekPoint | None, str]:
    """The checkpoint and its resume point if it may be used, else `(None, None, why)`."""
    cp, why = load_checkpoint(
        path, with_projection=with_projection, meta_only=meta_only, content=content
    )
    if cp is None:
        return None, None, why
    point, why = resume_cursor(journal_dir, cp)
    if point is None:
        return None, None, why
    return cp, point, ""


def _pack_index(points: Any) -> bytes:
    flat = array("Q")
    for p in points:
        flat.extend((p.seq, p.segment, p.offset, p.transcript_length))
    if sys.byteorder != "little":
        flat.byteswap()
    return flat.tobytes()


class SeekIndex(Sequence[SeekPoint]):
    """Seek points stored as packed little-endian u64 quadruples: a page read bisects them
    without building thousands of objects."""

    def __init__(self, packed: bytes) -> None:
        if len(packed) % 32:
            raise ValueError("seek index length")
        self._flat = array("Q", packed)
        if sys.byteorder != "little":
            self._flat.byteswap()
        self._seqs = self._flat[0::4]

    def __len__(self) -> int:
        return len(self._seqs)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return SeekPoint(*self._flat[4 * i : 4 * i + 4])

    def before(self, seq: int) -> SeekPoint | None:
        """The last seek point at or before `seq`."""
        i = bisect_right(self._seqs, seq)
        return self[i - 1] if i else None


def seek_point(index: Sequence[SeekPoint], seq: int) -> SeekPoint | None:
    """The last seek point at or before `seq`."""
    if isinstance(index, SeekIndex):
        return index.before(seq)
    i = bisect_right([p.seq for p in index], seq)
    return index[i - 1] if i else None


def wants_seek_point(seq: int, offset: int, segment_header_size: int) -> bool:
    return (seq - 1) % INDEX_STRIDE == 0 or offset == segment_header_size
