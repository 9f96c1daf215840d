"""Recovery rules (docs/journal.md): only an incomplete final write is truncated; every other
defect is refused with the file, offset and sequence."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from brain.journal import CorruptJournal, JournalWriter, SessionReader
from brain.journal.frames import FRAME_HEADER_SIZE, SEGMENT_HEADER_SIZE
from brain.journal.scan import JournalScan
from tests.journal.helpers import (
    created,
    delta,
    message,
    open_writer,
    segments,
    without_room,
)


def frame_offsets(journal_dir: Path) -> list[tuple[Path, int, int, int]]:
    """(segment path, start, end, seq) of every committed frame."""
    out = []
    for frame in JournalScan(journal_dir):
        path = journal_dir / f"{frame.segment:020d}.seg"
        out.append((path, frame.offset, frame.end, frame.seq))
    return out


def small_journal(session_dir: Path, last_batch: int = 1) -> None:
    writer = open_writer(session_dir, checkpoint_path=None)
    writer.append([created(seeded=1), delta(0, [message("seed")])])
    writer.append([{"kind": "turn_started", "input": "hello", "mode": "send"}])
    writer.append([{"kind": "kv_put", "key": "k", "value": [1, None, "x"]}])
    writer.append([{"kind": "turn_ended", "started": 3, "output": {"text": "ok"}}] * last_batch)
    writer.close()
    without_room(session_dir)


@pytest.mark.parametrize("last_batch", [1, 3])
def test_torn_last_batch_at_every_offset_recovers_to_previous_batch(
    tmp_path: Path, last_batch: int
) -> None:
    original = tmp_path / "original"
    small_journal(original, last_batch)
    frames = frame_offsets(original / "journal")
    [path] = segments(original)
    data = path.read_bytes()
    batch_start = frames[-last_batch][1]
    previous_seq = frames[-last_batch - 1][3]
    assert frames[-1][2] == len(data)
    for cut in range(batch_start, len(data)):
        session = tmp_path / f"cut{cut}"
        shutil.copytree(original, session)
        seg = segments(session)[0]
        seg.write_bytes(data[:cut])

        reader = SessionReader(session)  # a reader sees the committed prefix, changes nothing
        assert reader.projection().last_seq == previous_seq
        assert reader.status()["status"] == "running"
        assert seg.stat().st_size == cut

        writer = JournalWriter.open(session / "journal", checkpoint_path=None)
        assert writer.last_seq == previous_seq, cut
        assert seg.stat().st_size == batch_start
        [again] = writer.append([{"kind": "turn_ended", "started": 3, "output": "again"}])
        assert again["seq"] == previous_seq + 1
        writer.close()
        assert SessionReader(session).projection().status == "idle"
        shutil.rmtree(session)


def test_torn_write_truncation_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    small_journal(tmp_path)
    [path] = segments(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with caplog.at_level("WARNING", logger="brain.journal"):
        JournalWriter.open(tmp_path / "journal", checkpoint_path=None).close()
    assert any(
        "truncating torn write" in r.getMessage() and path.name in r.getMessage()
        for r in caplog.records
    )


def test_zeros_after_the_last_batch_are_room_kept_for_the_next(tmp_path: Path) -> None:
    """A writer keeps zeros after its frames (writer.py); so does a crash that extended the
    file but wrote nothing of its batch. Neither is history nor damage."""
    small_journal(tmp_path)
    [path] = segments(tmp_path)
    size = path.stat().st_size
    with open(path, "ab") as out:
        out.write(b"\0" * 700)
    assert SessionReader(tmp_path).projection().last_seq == 5
    writer = JournalWriter.open(tmp_path / "journal", checkpoint_path=None)
    assert writer.last_seq == 5 and path.stat().st_size == size + 700
    writer.append([{"kind": "kv_delete", "key": "k"}])  # written over the zeros
    writer.close()
    assert frame_offsets(tmp_path / "journal")[-1][1] == size  # where the zeros began
    assert SessionReader(tmp_path).projection().last_seq == 6


def test_zeros_after_part_of_a_batch_are_a_torn_write(tmp_path: Path) -> None:
    small_journal(tmp_path, last_batch=3)
    frames = frame_offsets(tmp_path / "journal")
    [path] = segments(tmp_path)
    batch_start, first_end = frames[-3][1], frames[-3][2]
    path.write_bytes(path.read_bytes()[:first_end] + b"\0" * 700)  # one frame of three
    writer = JournalWriter.open(tmp_path / "journal", checkpoint_path=None)
    assert writer.last_seq == frames[-4][3] and path.stat().st_size == batch_start
    writer.close()


def test_anything_but_zeros_after_the_last_batch_is_refused(tmp_path: Path) -> None:
    small_journal(tmp_path)
    [path] = segments(tmp_path)
    with open(path, "ab") as out:
        out.write(b"\0" * 300 + b"\x01" + b"\0" * 300)
    before = path.read_bytes()
    with pytest.raises(CorruptJournal):
        JournalWriter.open(tmp_path / "journal", checkpoint_path=None)
    assert path.read_bytes() == before


def test_zeroed_sectors_inside_the_last_frame_are_a_torn_write(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, checkpoint_path=None)
    writer.append([created()])
    writer.append([{"kind": "kv_put", "key": "big", "value": "v" * 3000}])
    writer.close()
    without_room(tmp_path)
    [path] = segments(tmp_path)
    data = bytearray(path.read_bytes())
    frames = frame_offsets(tmp_path / "journal")
    start, end = frames[-1][1], frames[-1][2]
    for boundary in range((start // 512 + 1) * 512, end - 16, 512):
        torn = bytes(data[:boundary]) + b"\0" * (end - boundary)
        path.write_bytes(torn)
        assert SessionReader(tmp_path).projection().last_seq == 1
        writer = JournalWriter.open(tmp_path / "journal", checkpoint_path=None)
        assert writer.last_seq == 1 and path.stat().st_size == start
        writer.close()


def test_every_bit_flip_in_complete_frames_is_refused(tmp_path: Path) -> None:
    small_journal(tmp_path)
    [path] = segments(tmp_path)
    data = path.read_bytes()
    assert len(data) < 1024
    refused = 0
    for offset in range(len(data)):
        for mask in (0x01, 0x80, 0x24):
            flipped = bytearray(data)
            flipped[offset] ^= mask
            path.write_bytes(bytes(flipped))
            with pytest.raises(CorruptJournal) as info:
                JournalWriter.open(tmp_path / "journal", checkpoint_path=None)
            assert info.value.path == str(path)
            assert info.value.offset <= offset
            assert path.read_bytes() == bytes(flipped)  # refusal changes nothing
            with pytest.raises(CorruptJournal):
                SessionReader(tmp_path).projection()
            refused += 1
    assert refused == 3 * len(data)
    path.write_bytes(data)
    JournalWriter.open(tmp_path / "journal", checkpoint_path=None).close()


def non_final_segment_journal(session_dir: Path) -> list[Path]:
    writer = open_writer(session_dir, segment_bytes=400, checkpoint_path=None)
    writer.append([created()])
    for i in range(12):
        writer.append([{"kind": "kv_put", "key": f"k{i}", "value": "x" * 60}])
    writer.close()
    files = segments(session_dir)
    assert len(files) >= 3
    return files


def test_non_final_segment_truncated_is_refused(tmp_path: Path) -> None:
    files = non_final_segment_journal(tmp_path)
    data = files[1].read_bytes()
    for cut in (len(data) - 1, len(data) - 30, SEGMENT_HEADER_SIZE + FRAME_HEADER_SIZE - 1):
        files[1].write_bytes(data[:cut])
        with pytest.raises(CorruptJournal) as info:
            JournalWriter.open(tmp_path / "journal", checkpoint_path=None)
        assert info.value.path == str(files[1])
        assert "not the last" in info.value.reason
        assert files[1].stat().st_size == cut


def test_sequence_gap_is_refused(tmp_path: Path) -> None:
    files = non_final_segment_journal(tmp_path)
    files[1].unlink()
    with pytest.raises(CorruptJournal) as info:
        JournalWriter.open(tmp_path / "journal", checkpoint_path=None)
    assert "sequence gap" in info.value.reason and info.value.path == str(files[2])
    assert info.value.seq == int(files[1].name[:20])


def test_renamed_segment_is_refused(tmp_path: Path) -> None:
    files = non_final_segment_journal(tmp_path)
    files[-1].rename(files[-1].with_name(f"{int(files[-1].name[:20]) + 1:020d}.seg"))
    with pytest.raises(CorruptJournal):
        JournalWriter.open(tmp_path / "journal", checkpoint_path=None)


def test_unfinished_segment_creation_is_cleaned_up(tmp_path: Path) -> None:
    small_journal(tmp_path)
    stray = tmp_path / "journal" / f"{6:020d}.seg.tmp"
    stray.write_bytes(b"BRAIN")
    writer = JournalWriter.open(tmp_path / "journal", checkpoint_path=None)
    assert writer.last_seq == 5 and not stray.exists()
    writer.close()


def test_refused_session_does_not_affect_others(tmp_path: Path) -> None:
    small_journal(tmp_path / "bad")
    small_journal(tmp_path / "good")
    [path] = segments(tmp_path / "bad")
    data = bytearray(path.read_bytes())
    data[SEGMENT_HEADER_SIZE + 30] ^= 0xFF
    path.write_bytes(bytes(data))
    assert SessionReader(tmp_path / "bad").status()["status"] == "damaged"
    assert SessionReader(tmp_path / "good").status()["status"] == "idle"
    writer = JournalWriter.open(tmp_path / "good" / "journal")
    assert writer.last_seq == 5
    writer.close()
