"""A power cut right after the first start: the data dir, the operator token and every
acknowledged journal record survive it, under strict POSIX and under a file system whose file
fsync also keeps the file's name (tests/support/power_loss.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain.data_dir import prepare_data_dir
from brain.journal import JournalWriter
from brain.journal.scan import JournalScan
from brain.operator_token import TOKEN_FILE, ensure_operator_token
from brain.settings import Settings
from tests.journal.helpers import Clock, created, delta, message
from tests.support.power_loss import MODES, NAME_WITH_FILE, STRICT, PowerLoss

SESSION = "01JZ0000000000000000000000"


@pytest.fixture(autouse=True)
def restore_umask() -> Iterator[None]:
    """prepare_data_dir sets the process umask, as Brain's entry points do; not for pytest."""
    old = os.umask(0o022)
    os.umask(old)
    yield
    os.umask(old)


def records(journal_dir: Path) -> list[dict]:
    return [frame.record for frame in JournalScan(journal_dir)]


@pytest.mark.parametrize("mode", MODES)
def test_a_first_start_and_its_acknowledged_records_survive_a_power_cut(
        tmp_path: Path, mode: str) -> None:
    data = tmp_path / "srv" / "brain" / "data"  # three directories the start makes
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(data)})
    journal_dir = settings.sessions_path / SESSION / "journal"
    with PowerLoss(tmp_path, mode) as disk:
        prepare_data_dir(settings.data_path)  # what `brain serve` and `brain actors` call
        token = ensure_operator_token(settings)
        writer = JournalWriter.open(journal_dir, clock=Clock())
        acknowledged = writer.append([created()])
        acknowledged += writer.append([delta(0, [message("hello")])])
        writer.close()
        assert disk.syncs
        disk.cut()

    assert (data / TOKEN_FILE).read_text().strip() == token
    assert [(r["seq"], r["kind"]) for r in records(journal_dir)] == \
        [(r["seq"], r["kind"]) for r in acknowledged]
    with JournalWriter.open(journal_dir, clock=Clock()) as reopened:  # and it takes the next
        assert reopened.last_seq == 2
        reopened.append([delta(1, [message("again", "assistant")])])


@pytest.mark.parametrize("mode", MODES)
def test_a_record_never_acknowledged_may_be_lost_but_never_half_kept(
        tmp_path: Path, mode: str) -> None:
    """The model loses what was not synced: the write of a batch without its fdatasync."""
    data = tmp_path / "data"
    journal_dir = data / "sessions" / SESSION / "journal"
    with PowerLoss(tmp_path, mode) as disk:
        prepare_data_dir(data)
        with JournalWriter.open(journal_dir, clock=Clock()) as writer:
            writer.append([created()])
            real = os.fdatasync
            os.fdatasync = lambda fd: None  # the next batch is written, never synced
            try:
                writer.append([delta(0, [message("lost")])])
            finally:
                os.fdatasync = real
        disk.cut()
    assert [r["kind"] for r in records(journal_dir)] == ["session_created"]


def test_strict_posix_loses_a_data_dir_made_by_a_plain_mkdir(tmp_path: Path) -> None:
    """What the start did before make_dirs_durable: the journal's own fsyncs (file and
    directory) all succeed, and the cut still takes the data dir away whole."""
    data = tmp_path / "data"
    with PowerLoss(tmp_path, STRICT) as disk:
        data.mkdir()  # no fsync of its parent
        write_synced(data / "sessions.bin", b"acknowledged")
        assert "data" not in disk.durable_names()
        disk.cut()
    assert not data.exists()


def test_a_file_fsync_keeps_its_names_only_where_the_file_system_says_so(tmp_path: Path) -> None:
    """The same steps under the other mode keep the data dir: the difference is the file
    system's, which is why Brain fsyncs every parent itself."""
    data = tmp_path / "data"
    with PowerLoss(tmp_path, NAME_WITH_FILE) as disk:
        data.mkdir()
        write_synced(data / "sessions.bin", b"acknowledged")
        (data / "never-synced").write_bytes(b"x")
        disk.cut()
    assert (data / "sessions.bin").read_bytes() == b"acknowledged"
    assert not (data / "never-synced").exists()


def test_a_rename_without_the_directory_fsync_is_lost_under_strict_posix(
        tmp_path: Path) -> None:
    (tmp_path / "record").write_bytes(b"old")
    with PowerLoss(tmp_path, STRICT) as disk:
        write_synced(tmp_path / "record.tmp", b"new")
        os.replace(tmp_path / "record.tmp", tmp_path / "record")
        disk.cut()
    assert (tmp_path / "record").read_bytes() == b"old"
    assert not (tmp_path / "record.tmp").exists()


def write_synced(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
