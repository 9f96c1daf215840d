"""History checksums: the CRC32C of each segment's bytes, so an open verifies old frames fast.

The checkpoint lets an open skip decoding the history it covers, but not verifying it: a
complete frame whose checksum fails makes the session damaged wherever it is. Walking every
frame header of a 100,000-record session in Python costs about ten times the rest of the
open, so the writer keeps, for every segment, the CRC32C of all its bytes (segment header,
frame headers and payloads alike) and the checkpoint records them for the history it covers.
The open recomputes them in one pass at the speed of the C CRC (no CBOR, no per-frame work)
and compares. A single flipped bit anywhere changes a segment's CRC; when the checksums
disagree, the open falls back to reading every frame, which names the damaged frame (or, if
every frame verifies, finds the checkpoint stale and rebuilds it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import google_crc32c

from brain.fds import close_fd
from brain.journal.segments import Segment

PASS_CHUNK = 1 << 20  # measured: 1 MiB preads keep the pass at memory speed


class SegmentDigest(NamedTuple):
    """The CRC32C of the first `length` bytes of segment `segment` (its first_seq)."""

    segment: int
    length: int
    crc: int


def crc_of_file(path: Path, length: int, start: int = 0, crc: int = 0) -> int | None:
    """`crc` extended with bytes [start, length) of `path`; None when the file is shorter."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        extend, pread = google_crc32c.extend, os.pread
        pos = start
        while pos < length:
            chunk = pread(fd, min(PASS_CHUNK, length - pos), pos)
            if not chunk:
                return None
            crc = extend(crc, chunk)
            pos += len(chunk)
    finally:
        close_fd(fd)
    return crc


def history_mismatch(
    segments: Sequence[Segment], history: Sequence[SegmentDigest], through: int, end: int
) -> str | None:
    """Why the segments' bytes are not the `history` a checkpoint recorded, or None.

    `history` must cover exactly the segments up to `through` (the checkpoint's segment): the
    earlier ones whole, as they were closed, and `through` up to `end`, the end of the
    checkpoint's last frame. This is the CRC pass of every open from a checkpoint.
    """
    if not history:
        return "no history checksums (written by an older Brain)"
    covered = [s for s in segments if s.first_seq <= through]
    if [s.first_seq for s in covered] != [d.segment for d in history]:
        return "history checksums name other segments"
    if history[-1].length != end:
        return "history checksums end elsewhere than the checkpoint"
    for segment, digest in zip(covered, history, strict=True):
        try:
            size = os.stat(segment.path).st_size
        except FileNotFoundError:
            return f"{segment.path.name} is gone"
        if size < digest.length or (segment.first_seq != through and size != digest.length):
            return f"{segment.path.name} changed size"
        if crc_of_file(segment.path, digest.length) != digest.crc:
            return f"{segment.path.name} bytes differ from its history checksum"
    return None


def digest_segments(
    segments: Sequence[Segment], known: Sequence[SegmentDigest] = (), last_end: int | None = None
) -> list[SegmentDigest]:
    """Every segment's CRC as the files stand now, extending the verified prefixes in `known`
    instead of reading them again (what recovery keeps running for its appends). `last_end`:
    where the last segment's frames end, when unused zeros follow them (writer.py)."""
    prefixes = {d.segment: d for d in known}
    digests = []
    for index, segment in enumerate(segments):
        size = os.stat(segment.path).st_size
        if last_end is not None and index == len(segments) - 1:
            size = min(size, last_end)
        prefix = prefixes.get(segment.first_seq)
        start, crc = (prefix.length, prefix.crc) if prefix and prefix.length <= size else (0, 0)
        value = crc_of_file(segment.path, size, start, crc)
        if value is None:  # the file shrank under us: only a second writer could do that
            raise OSError(f"{segment.path} shrank while its checksum was computed")
        digests.append(SegmentDigest(segment.first_seq, size, value))
    return digests
