"""The zeros a writer keeps after the last segment's frames: written over by the next batches,
never taken for history or damage, cut off before a roll."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from brain.journal import CorruptJournal, JournalWriter, SessionReader
from brain.journal import writer as writer_module
from brain.journal.scan import JournalScan
from tests.journal.helpers import created, open_writer, segments


def frames_end(journal_dir: Path) -> int:
    scan = JournalScan(journal_dir)
    for _frame in scan:
        pass
    assert scan.end is not None
    return scan.end.offset


def test_the_last_segment_keeps_zeros_after_its_frames_across_reopens(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, checkpoint_path=None)
    writer.append([created()])
    writer.append([{"kind": "kv_put", "key": "k", "value": "v" * 100}])
    [path] = segments(tmp_path)
    end = frames_end(tmp_path / "journal")
    size = path.stat().st_size
    assert size >= end + writer_module.MIN_SLACK_BYTES
    assert path.read_bytes()[end:].count(0) == size - end  # zeros only
    reader = SessionReader(tmp_path)
    assert reader.projection().last_seq == 2 and reader.projection().kv == {"k": "v" * 100}
    writer.close()
    assert path.stat().st_size == size  # kept for the next turn
    reopened = JournalWriter.open(tmp_path / "journal", checkpoint_path=None)
    reopened.append([{"kind": "kv_delete", "key": "k"}])
    assert path.stat().st_size == size  # written over the zeros: the file did not grow
    reopened.close()
    assert SessionReader(tmp_path).projection().kv == {}


def test_a_batch_cut_at_a_sector_over_the_room_is_a_torn_write(tmp_path: Path) -> None:
    """What a crash leaves of a batch written over the room, or a reader sees while the writer
    pauses between pages: its first sectors, then zeros. The batches before it are history."""
    original = tmp_path / "original"
    writer = open_writer(original, checkpoint_path=None)
    writer.append([created()])
    writer.append([{"kind": "kv_put", "key": "a", "value": 1}])
    before = frames_end(original / "journal")
    writer.append([{"kind": "kv_put", "key": "b", "value": "x" * 3000},
                   {"kind": "kv_put", "key": "c", "value": "y" * 100}])
    writer.close()
    [path] = segments(original)
    data = path.read_bytes()
    after = frames_end(original / "journal")
    cuts = [before, *range(-(-(before + 1) // 512) * 512, after, 512)]
    assert len(cuts) >= 6
    for cut in cuts:
        session = tmp_path / f"cut{cut}"
        shutil.copytree(original, session)
        seg = segments(session)[0]
        seg.write_bytes(data[:cut] + bytes(len(data) - cut))
        assert SessionReader(session).projection().last_seq == 2, cut
        reopened = JournalWriter.open(session / "journal", checkpoint_path=None)
        assert reopened.last_seq == 2
        # Nothing of the batch written is room; some of it is a torn write, cut off.
        assert seg.stat().st_size == (len(data) if cut == before else before), cut
        reopened.close()
        shutil.rmtree(session)


def test_a_last_frame_that_ends_in_a_zero_byte_and_is_damaged_is_refused(
        tmp_path: Path) -> None:
    """The room's zeros after it do not make a damaged frame look torn."""
    writer = open_writer(tmp_path, checkpoint_path=None)
    writer.append([created()])
    writer.append([{"kind": "kv_put", "key": "k", "value": 0}])  # its payload ends in 0x00
    writer.close()
    [path] = segments(tmp_path)
    end = frames_end(tmp_path / "journal")
    data = bytearray(path.read_bytes())
    assert data[end - 1] == 0 and len(data) > end + 16
    data[end - 8] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptJournal):
        JournalWriter.open(tmp_path / "journal", checkpoint_path=None)
    assert path.read_bytes() == bytes(data)


def test_a_rolled_segment_ends_at_its_last_frame(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, segment_bytes=2048, checkpoint_path=None)
    writer.append([created()])
    for i in range(20):
        writer.append([{"kind": "kv_put", "key": f"k{i}", "value": "x" * 300}])
    files = segments(tmp_path)
    assert len(files) >= 3
    for closed in files[:-1]:
        assert not closed.read_bytes().endswith(bytes(16)), closed.name
    assert files[-1].stat().st_size > frames_end(tmp_path / "journal")
    assert SessionReader(tmp_path).projection().last_seq == 21
    writer.close()
    assert JournalWriter.open(tmp_path / "journal", checkpoint_path=None).last_seq == 21


def test_readers_beside_a_writer_of_big_batches_never_see_damage(tmp_path: Path) -> None:
    """A reader's view of a batch being copied over the room changes while it looks: what it
    checked first may be cut, and by the time it looks further the copy has moved on. That is a
    write in progress, never damage (it was, once: an SSE stream ended as 'damaged')."""
    import threading

    writer = open_writer(tmp_path, checkpoint_path=None)
    writer.append([created()])
    stop = threading.Event()
    refused: list[BaseException] = []

    def read_until_stopped() -> None:
        while not stop.is_set():
            try:
                scan = JournalScan(tmp_path / "journal", decode=False)
                for _frame in scan:
                    pass
            except Exception as exc:  # noqa: BLE001 - any refusal fails the test
                refused.append(exc)
                return

    readers = [threading.Thread(target=read_until_stopped) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for i in range(60):
            writer.append([{"kind": "kv_put", "key": f"k{i}", "value": "x" * 300_000},
                           {"kind": "kv_put", "key": f"s{i}", "value": i}])
    finally:
        stop.set()
        for reader in readers:
            reader.join(timeout=30)
        writer.close()
    assert refused == []
    assert SessionReader(tmp_path).projection().last_seq == 121
