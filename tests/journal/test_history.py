"""The writer's open verifies every frame, the history a checkpoint covers included, with one CRC
pass over the segment bytes: a flipped bit there is refused with its segment and offset, a torn
tail is still truncated, and a checkpoint whose checksums are merely stale is rebuilt."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from brain.journal import CorruptJournal, JournalWriter, SessionReader, load_checkpoint
from brain.journal.checkpoint import encode_checkpoint
from brain.journal.frames import FRAME_HEADER_SIZE
from brain.journal.history import SegmentDigest, crc_of_file
from brain.journal.scan import JournalScan
from tests.journal.helpers import (
    created,
    delta,
    message,
    open_writer,
    segments,
    without_room,
)


def turns_journal(session_dir: Path, turns: int = 4, segment_bytes: int = 64 << 20) -> None:
    """A session of a few turns with a checkpoint after each, as the session actor leaves it."""
    writer = open_writer(session_dir, segment_bytes=segment_bytes)
    writer.append([created(seeded=1), delta(0, [message("seed")])])
    length = 1
    for i in range(turns):
        [turn] = writer.append([{"kind": "turn_started", "input": f"q{i}", "mode": "send"}])
        writer.append([delta(length, [message(f"q{i}"), message(f"a{i}", "assistant")])])
        length += 2
        writer.append([{"kind": "turn_ended", "started": turn["seq"], "output": f"a{i}"}])
        writer.write_checkpoint(SessionReader(session_dir).projection())
    writer.close()
    without_room(session_dir)


def covered_frames(session_dir: Path) -> list[tuple[Path, int, int]]:
    """(segment, start, end) of every frame the checkpoint covers."""
    cp, why = load_checkpoint(session_dir / "checkpoint")
    assert cp is not None, why
    return [
        (session_dir / "journal" / f"{frame.segment:020d}.seg", frame.offset, frame.end)
        for frame in JournalScan(session_dir / "journal", decode=False)
        if frame.seq <= cp.seq
    ]


def flip(path: Path, offset: int, mask: int = 0x01) -> bytes:
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    path.write_bytes(bytes(data))
    return bytes(data)


def journal_bytes(session_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in segments(session_dir)}


def test_a_flipped_bit_in_an_early_covered_frame_is_refused_with_segment_and_offset(
    tmp_path: Path,
) -> None:
    turns_journal(tmp_path)
    path, start, _end = covered_frames(tmp_path)[2]  # the first turn_started, long before it
    flip(path, start + FRAME_HEADER_SIZE + 3)
    before = journal_bytes(tmp_path)
    assert SessionReader(tmp_path).status()["status"] == "idle"  # a status read trusts it
    with pytest.raises(CorruptJournal) as refused:
        JournalWriter.open(tmp_path / "journal")
    assert (refused.value.path, refused.value.offset) == (str(path), start)
    assert refused.value.reason == "payload checksum mismatch"
    assert journal_bytes(tmp_path) == before  # nothing appended, nothing truncated
    # The checkpoint covered refused history: it is gone, so every read meets the damage.
    assert not (tmp_path / "checkpoint").exists()
    assert SessionReader(tmp_path).status()["status"] == "damaged"
    with pytest.raises(CorruptJournal):
        SessionReader(tmp_path).transcript()
    with pytest.raises(CorruptJournal) as again:  # and the next open refuses it the same way
        JournalWriter.open(tmp_path / "journal")
    assert (again.value.path, again.value.offset) == (str(path), start)


def test_every_bit_flip_in_covered_history_is_refused(tmp_path: Path) -> None:
    turns_journal(tmp_path, turns=1)
    checkpoint = (tmp_path / "checkpoint").read_bytes()
    [path] = segments(tmp_path)
    good = path.read_bytes()
    frames = covered_frames(tmp_path)
    assert frames[-1][2] == len(good)  # the checkpoint covers the whole journal
    for offset in range(len(good)):
        flipped = flip(path, offset, 0x10)
        (tmp_path / "checkpoint").write_bytes(checkpoint)
        with pytest.raises(CorruptJournal) as refused:
            JournalWriter.open(tmp_path / "journal").close()
        # It names the frame holding the flipped byte (the file's start for its header).
        [frame_start] = [start for _p, start, end in frames if start <= offset < end] or [0]
        assert (refused.value.path, refused.value.offset) == (str(path), frame_start), offset
        assert path.read_bytes() == flipped
        path.write_bytes(good)
    (tmp_path / "checkpoint").write_bytes(checkpoint)
    JournalWriter.open(tmp_path / "journal").close()
    assert (tmp_path / "checkpoint").read_bytes() == checkpoint  # trusted again, not rebuilt


def test_a_flip_in_a_closed_segment_names_that_segment(tmp_path: Path) -> None:
    turns_journal(tmp_path, turns=12, segment_bytes=600)
    files = segments(tmp_path)
    assert len(files) >= 3
    frames = [f for f in covered_frames(tmp_path) if f[0] == files[1]]
    path, start, end = frames[-1]  # the last frame of a segment that is not the last
    flip(path, end - 1)
    with pytest.raises(CorruptJournal) as refused:
        JournalWriter.open(tmp_path / "journal", segment_bytes=600)
    assert (refused.value.path, refused.value.offset) == (str(files[1]), start)


def test_a_torn_tail_after_a_checkpoint_is_still_truncated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    turns_journal(tmp_path)
    checkpoint = (tmp_path / "checkpoint").read_bytes()
    [path] = segments(tmp_path)
    committed = path.stat().st_size
    with open(path, "ab") as tail:  # half of a frame: a write that never finished
        tail.write(b"\x30\x00\x00\x00\x01\x00\x00\x00\x0e\x00\x00\x00")
    with caplog.at_level(logging.INFO, logger="brain.journal"):
        writer = JournalWriter.open(tmp_path / "journal")
    assert path.stat().st_size == committed
    assert "truncating torn write" in caplog.text
    assert "rebuilding" not in caplog.text  # the checkpoint's history verified
    assert (tmp_path / "checkpoint").read_bytes() == checkpoint
    writer.append([{"kind": "kv_put", "key": "after", "value": 1}])
    writer.write_checkpoint(SessionReader(tmp_path).projection())
    writer.close()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="brain.journal"):
        JournalWriter.open(tmp_path / "journal").close()
    assert "rebuilding" not in caplog.text  # the running checksums match the file


def test_checksums_kept_across_rolls_and_reopens_match_the_files(tmp_path: Path) -> None:
    turns_journal(tmp_path, turns=3, segment_bytes=500)
    for i in range(3):  # reopen from the checkpoint, append across a roll, checkpoint again
        writer = open_writer(tmp_path, segment_bytes=500)
        writer.append([{"kind": "kv_put", "key": f"k{i}", "value": "x" * 300}])
        writer.append([{"kind": "kv_put", "key": f"k{i}", "value": "y" * 300}])
        writer.write_checkpoint(SessionReader(tmp_path).projection())
        writer.close()
    without_room(tmp_path)
    cp, _ = load_checkpoint(tmp_path / "checkpoint")
    files = segments(tmp_path)
    assert len(cp.history) == len(files) > 3
    for digest, path in zip(cp.history, files, strict=True):
        assert digest.length == path.stat().st_size
        assert crc_of_file(path, digest.length) == digest.crc


@pytest.mark.parametrize("history", ["absent", "wrong"])
def test_a_checkpoint_with_absent_or_wrong_checksums_is_rebuilt(
    tmp_path: Path, history: str
) -> None:
    turns_journal(tmp_path)
    path = tmp_path / "checkpoint"
    cp, _ = load_checkpoint(path)
    expected = cp.projection
    good = path.read_bytes()
    digests = () if history == "absent" else tuple(
        SegmentDigest(d.segment, d.length, d.crc ^ 1) for d in cp.history
    )
    path.write_bytes(encode_checkpoint(replace(cp, history=digests), expected))
    before = journal_bytes(tmp_path)
    JournalWriter.open(tmp_path / "journal").close()  # every frame verifies: only stale
    assert journal_bytes(tmp_path) == before
    assert path.read_bytes() == good  # rebuilt, with the files' own checksums
    assert SessionReader(tmp_path).projection() == expected


def test_a_writer_kept_open_finds_damage_made_since_its_open(tmp_path: Path) -> None:
    turns_journal(tmp_path, turns=3, segment_bytes=700)
    writer = open_writer(tmp_path, segment_bytes=700)
    writer.append([{"kind": "kv_put", "key": "k", "value": "v" * 200}])
    writer.append([{"kind": "kv_put", "key": "k", "value": "w" * 200}])  # rolls
    writer.verify()  # its own appends and rolls keep the checksums true
    path, start, _end = covered_frames(tmp_path)[1]
    flip(path, start + 7)  # the frame header's reserved bytes: its header checksum fails
    before = journal_bytes(tmp_path)
    with pytest.raises(CorruptJournal) as refused:
        writer.verify()
    assert (refused.value.path, refused.value.offset) == (str(path), start)
    assert refused.value.reason == "frame header checksum mismatch"
    assert journal_bytes(tmp_path) == before
    assert not (tmp_path / "checkpoint").exists()
    writer.close()
