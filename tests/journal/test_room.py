"""The zeros a writer keeps after the last segment's frames: written over by the next batches,
never taken for history or damage, cut off before a roll."""

from __future__ import annotations

import shutil
from pathlib import Path

from brain.journal import JournalWriter, SessionReader
from brain.journal import writer as writer_module
from brain.journal.segments import JournalScan
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


def test_a_reader_beside_a_batch_cut_at_any_byte_sees_the_batches_before_it(
        tmp_path: Path) -> None:
    """A reader may see a batch half copied over the zeros (a page is read while it is
    written): that is an unfinished write, never damage."""
    original = tmp_path / "original"
    writer = open_writer(original, checkpoint_path=None)
    writer.append([created()])
    writer.append([{"kind": "kv_put", "key": "a", "value": 1}])
    before = frames_end(original / "journal")
    writer.append([{"kind": "kv_put", "key": "b", "value": "x" * 700},
                   {"kind": "kv_put", "key": "c", "value": 0}])
    writer.close()
    [path] = segments(original)
    data = path.read_bytes()
    after = frames_end(original / "journal")
    assert not any(data[after - 1:after])  # the last record ends in a zero byte ("value": 0)
    for cut in range(before, after):
        session = tmp_path / f"cut{cut}"
        shutil.copytree(original, session)
        seg = segments(session)[0]
        seg.write_bytes(data[:cut] + bytes(len(data) - cut))  # as the writer's file was
        whole = not any(data[cut:after])  # the last cut lacks only that zero: it is whole
        assert SessionReader(session).projection().last_seq == (4 if whole else 2), cut
        reopened = JournalWriter.open(session / "journal", checkpoint_path=None)
        assert reopened.last_seq == (4 if whole else 2)
        # A torn batch is cut off with the zeros after it; nothing of it written is room.
        torn = before < cut and not whole
        assert seg.stat().st_size == (before if torn else len(data))
        reopened.close()
        shutil.rmtree(session)


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
