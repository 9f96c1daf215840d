"""`JournalWriter.reopen`: a closed writer taken up again only while its journal is exactly as
it left it. Anything another writer did, or damage, sends the caller to a full open."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from brain.journal import CorruptJournal, JournalLocked, JournalWriter, SessionReader
from tests.journal.helpers import created, open_writer, segments


def closed_writer(tmp_path: Path, batches: int = 3, **kw: object) -> JournalWriter:
    writer = open_writer(tmp_path, **kw)
    writer.append([created()])
    for n in range(batches):
        writer.append([{"kind": "kv_put", "key": f"k{n}", "value": n}])
    writer.close()
    return writer


def test_an_unchanged_journal_is_taken_up_again_and_appended_to(tmp_path: Path) -> None:
    writer = closed_writer(tmp_path)
    assert writer.reopen()
    with pytest.raises(JournalLocked):  # it holds the lock again
        JournalWriter.open(tmp_path / "journal")
    writer.append([{"kind": "kv_put", "key": "after", "value": 1}])
    writer.close()
    projection = SessionReader(tmp_path).projection()
    assert projection.last_seq == 5 and projection.kv["after"] == 1
    again = JournalWriter.open(tmp_path / "journal", project=True)  # a full recovery agrees
    assert again.last_seq == 5 and again.opened == projection
    again.close()


def test_an_open_that_wrote_nothing_leaves_it_reusable(tmp_path: Path) -> None:
    writer = closed_writer(tmp_path)
    JournalWriter.open(tmp_path / "journal").close()
    assert writer.reopen()
    writer.close()


def test_another_writers_append_sends_it_to_a_full_open(tmp_path: Path) -> None:
    writer = closed_writer(tmp_path)
    other = JournalWriter.open(tmp_path / "journal")
    other.append([{"kind": "kv_put", "key": "theirs", "value": 1}])  # over the same room
    other.close()
    assert not writer.reopen()
    opened = JournalWriter.open(tmp_path / "journal", project=True)  # the lock was let go
    assert opened.last_seq == 5 and opened.opened.kv["theirs"] == 1
    opened.close()


def test_bytes_after_its_frames_without_a_close_are_not_its_journal(tmp_path: Path) -> None:
    """A writer that died between its write and its flush leaves bytes in the room and no
    synced mark; even with the mark put back, the bytes themselves refuse the reuse."""
    writer = closed_writer(tmp_path)
    [path] = segments(tmp_path)
    mark = os.getxattr(path, "user.brain.synced")
    end = writer.journal_bytes
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"\x07" * 16, end)
    finally:
        os.close(fd)
    os.setxattr(path, "user.brain.synced", mark)
    assert not writer.reopen()


def test_damage_in_its_history_is_found_by_the_full_open_it_falls_back_to(tmp_path: Path) -> None:
    writer = closed_writer(tmp_path, checkpoint_path=None)
    [path] = segments(tmp_path)
    data = bytearray(path.read_bytes())
    data[60] ^= 0xFF  # inside the first frame
    path.write_bytes(bytes(data))
    os.setxattr(path, "user.brain.synced", str(len(data)).encode())
    assert not writer.reopen()
    with pytest.raises(CorruptJournal):
        JournalWriter.open(tmp_path / "journal", checkpoint_path=None)


def test_a_new_segment_sends_it_to_a_full_open(tmp_path: Path) -> None:
    writer = closed_writer(tmp_path, segment_bytes=4096)
    other = JournalWriter.open(tmp_path / "journal", segment_bytes=4096)
    while len(segments(tmp_path)) == 1:
        other.append([{"kind": "kv_put", "key": "big", "value": "x" * 1000}])
    other.close()
    assert not writer.reopen()


def test_a_locked_an_open_or_a_broken_writer_is_not_taken_up(tmp_path: Path) -> None:
    writer = closed_writer(tmp_path)
    holder = JournalWriter.open(tmp_path / "journal")
    assert not writer.reopen()  # locked by another writer
    holder.close()
    assert writer.reopen()
    assert not writer.reopen()  # already open
    writer.close()
    writer._broken = OSError("a failed fdatasync")  # as append leaves it
    assert writer.broken and not writer.reopen()
