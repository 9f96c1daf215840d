"""The segment store: naming, listing and creating segment files, and reading one frame header.

A journal is a directory of segments (`{first_seq:020d}.seg`, docs/journal.md). This module
knows where they are and how one is made durably; reading a journal's frames in order, with the
recovery rules, is the scanner's job (scan.py), which builds on it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from brain.durable_dirs import PRIVATE_FILE_MODE, fsync_dir
from brain.fds import close_fd
from brain.journal.errors import JournalError, JournalNotFound
from brain.journal.frames import (
    FRAME_HEADER_SIZE,
    FrameHeader,
    crc32c,
    decode_frame_header,
    encode_segment_header,
)

SEGMENT_NAME = re.compile(r"^(\d{20})\.seg$")
TEMP_SUFFIX = ".tmp"


def segment_name(first_seq: int) -> str:
    return f"{first_seq:020d}.seg"


@dataclass(frozen=True, slots=True)
class Segment:
    first_seq: int
    path: Path


@dataclass(frozen=True, slots=True)
class Cursor:
    """A frame boundary: byte `offset` in segment `segment` (its first_seq), where `seq` starts."""

    segment: int
    offset: int
    seq: int


def list_segments(journal_dir: Path) -> list[Segment]:
    """Segments in sequence order; other files (temporaries, strangers) are ignored."""
    try:
        names = os.listdir(journal_dir)
    except FileNotFoundError:
        raise JournalNotFound(f"no journal at {journal_dir}") from None
    except NotADirectoryError:
        raise JournalNotFound(f"{journal_dir} is not a journal directory") from None
    found = []
    for name in names:
        match = SEGMENT_NAME.match(name)
        if match:
            found.append(Segment(int(match.group(1)), journal_dir / name))
    found.sort(key=lambda s: s.first_seq)
    return found


def create_segment(journal_dir: Path, first_seq: int) -> Path:
    """Create a segment holding only its header, atomically: after a crash the file either does
    not exist or has a complete header. The directory is fsync'd so the name is durable."""
    final = journal_dir / segment_name(first_seq)
    if final.exists():
        raise JournalError(f"{final} already exists")
    temp = final.with_name(final.name + TEMP_SUFFIX)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                 PRIVATE_FILE_MODE)
    try:
        header = encode_segment_header(first_seq)
        if os.write(fd, header) != len(header):
            raise JournalError(f"short write creating {temp}")
        os.fsync(fd)
    finally:
        close_fd(fd)
    os.rename(temp, final)
    fsync_dir(journal_dir)
    return final


def read_frame_header(path: Path, offset: int) -> FrameHeader | None:
    """The valid frame header at `offset` of `path`, or None (missing file, short, bad crc)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.pread(fd, FRAME_HEADER_SIZE, offset)
    finally:
        close_fd(fd)
    if len(data) < FRAME_HEADER_SIZE:
        return None
    return decode_frame_header(data)


def frame_is_whole(path: Path, offset: int, header: FrameHeader) -> bool:
    """Whether the frame with `header` at `offset` is entirely in `path` with a good payload."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        payload = os.pread(fd, header.length, offset + FRAME_HEADER_SIZE)
    finally:
        close_fd(fd)
    return len(payload) == header.length and crc32c(payload) == header.payload_crc
