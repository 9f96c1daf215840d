"""Damage a session's journal on disk the way a bad sector would, for tests of what Brain
refuses and what it keeps serving."""

from __future__ import annotations

from pathlib import Path

from brain.journal.frames import FRAME_HEADER_SIZE, SEGMENT_HEADER_SIZE


def damage_first_record(session_dir: Path) -> None:
    """Flip one payload byte of the first, complete frame (session_created).

    The checkpoint goes too: it is disposable, and the journal trusts it for the frames it
    covers, so with it the damage would be found only by a read from the start.
    """
    segment = sorted((session_dir / "journal").glob("*.seg"))[0]
    data = bytearray(segment.read_bytes())
    data[SEGMENT_HEADER_SIZE + FRAME_HEADER_SIZE + 5] ^= 0xFF
    segment.write_bytes(bytes(data))
    (session_dir / "checkpoint").unlink(missing_ok=True)
