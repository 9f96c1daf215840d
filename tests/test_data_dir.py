"""The data dir at start (brain/data_dir.py): made private and durable, or warned about."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain.data_dir import prepare_data_dir


@pytest.fixture(autouse=True)
def restore_umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_data_dir_and_its_parents_are_0700_and_later_files_0600(tmp_path: Path) -> None:
    data = tmp_path / "a" / "b"
    prepare_data_dir(data)
    for made in (tmp_path / "a", data):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700
    (data / "plain").write_text("made by a plain open")  # the umask covers what names no mode
    assert stat.S_IMODE((data / "plain").stat().st_mode) == 0o600


def test_an_open_data_dir_is_warned_about_in_one_line_and_kept(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)
    with caplog.at_level(logging.WARNING, "brain.data_dir"):
        prepare_data_dir(data)
    [line] = [r for r in caplog.records if r.name == "brain.data_dir"]
    assert line.levelno == logging.WARNING
    assert "0755" in line.getMessage() and f"chmod 700 {data}" in line.getMessage()
    assert stat.S_IMODE(data.stat().st_mode) == 0o755  # the operator's choice is not undone


def test_a_private_data_dir_is_not_warned_about(tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    with caplog.at_level(logging.WARNING, "brain.data_dir"):
        prepare_data_dir(data)
    assert not [r for r in caplog.records if r.name == "brain.data_dir"]
