"""An open flushes the journal unless the writer before it closed healthy at that very size:
the flush of a file with nothing dirty costs as much as a real one, once per released turn."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from brain.journal import JournalWriter, SessionReader, WriterBroken
from brain.journal.synced_mark import SYNCED_XATTR
from tests.journal.helpers import created, open_writer, segments


def supports_xattrs(path: Path) -> bool:
    probe = path / "probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, SYNCED_XATTR, b"0")
    except OSError:
        return False
    finally:
        probe.unlink()
    return True


@pytest.fixture
def flushes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    if not supports_xattrs(tmp_path):
        pytest.skip("no user extended attributes on this file system")
    calls: list[int] = []
    real = os.fdatasync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counted)
    return calls


def mark(session_dir: Path) -> bytes | None:
    try:
        return os.getxattr(segments(session_dir)[-1], SYNCED_XATTR)
    except OSError:
        return None


def test_an_open_after_a_healthy_close_skips_the_flush(tmp_path: Path,
                                                       flushes: list[int]) -> None:
    writer = open_writer(tmp_path)
    writer.append([created()])
    writer.append([{"kind": "kv_put", "key": "k", "value": 1}])
    writer.close()
    size = segments(tmp_path)[-1].stat().st_size
    assert mark(tmp_path) == str(size).encode()
    flushes.clear()

    writer = open_writer(tmp_path)
    assert flushes == []  # nothing written since the last flush
    assert mark(tmp_path) is None  # taken: a crash of this writer must not be masked
    writer.append([{"kind": "kv_put", "key": "k", "value": 2}])
    assert len(flushes) == 1
    writer.close()
    assert SessionReader(tmp_path).projection().kv == {"k": 2}


def test_an_open_after_a_writer_that_died_flushes(tmp_path: Path, flushes: list[int]) -> None:
    writer = open_writer(tmp_path)
    writer.append([created()])
    # Died: its descriptors go with the process, close() never runs (no tag).
    os.close(writer._fd)
    os.close(writer._lock_fd)
    writer._fd = writer._lock_fd = None
    assert mark(tmp_path) is None
    flushes.clear()
    open_writer(tmp_path).close()
    assert len(flushes) == 1


def test_a_tag_for_another_size_is_not_trusted(tmp_path: Path, flushes: list[int]) -> None:
    writer = open_writer(tmp_path)
    writer.append([created()])
    writer.close()
    segment = segments(tmp_path)[-1]
    os.setxattr(segment, SYNCED_XATTR, b"17")
    flushes.clear()
    open_writer(tmp_path).close()
    assert len(flushes) == 1


def test_a_broken_writer_leaves_no_tag(tmp_path: Path, flushes: list[int],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    writer = open_writer(tmp_path)
    writer.append([created()])

    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", failing)
    with pytest.raises(WriterBroken):
        writer.append([{"kind": "kv_put", "key": "k", "value": 1}])
    writer.close()
    assert mark(tmp_path) is None


def test_an_open_whose_flush_fails_leaves_no_tag(tmp_path: Path, flushes: list[int],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    writer = open_writer(tmp_path)
    writer.append([created()])
    os.close(writer._fd)  # died without its tag
    os.close(writer._lock_fd)
    writer._fd = writer._lock_fd = None

    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", failing)
    with pytest.raises(OSError):
        JournalWriter.open(tmp_path / "journal")
    assert mark(tmp_path) is None
