"""A damaged session is named in the log once: on first detection, by whichever process of the
data dir finds it first, and again only for a different damage (brain/damage_report.py)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from brain import damage_report
from brain.damage_report import _claim, damage_mark, forget_damage, report_damage
from brain.journal import CorruptJournal
from tests.support.forking import FORK_WITH_THREADS

SESSION = "01a2"
CLAIMERS = 4


@pytest.fixture(autouse=True)
def fresh_process() -> None:
    damage_report._known.clear()


def refusal(data_dir: Path, offset: int = 1618) -> CorruptJournal:
    segment = data_dir / "sessions" / SESSION / "journal" / f"{1:020d}.seg"
    return CorruptJournal(segment, offset, 13, "payload checksum mismatch")


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "brain.damage_report" and r.levelno == logging.WARNING]


def test_the_first_detection_is_logged_and_later_ones_are_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        damage = report_damage(tmp_path, SESSION, refusal(tmp_path))
        report_damage(tmp_path, SESSION, refusal(tmp_path))
        damage_report._known.clear()  # as another process (a web worker, an actor) would be
        report_damage(tmp_path, SESSION, refusal(tmp_path))
    assert damage.as_json() == {"segment": f"sessions/{SESSION}/journal/{1:020d}.seg",
                                "offset": 1618, "sequence": 13,
                                "reason": "payload checksum mismatch"}
    said = warnings(caplog)
    assert len(said) == 1 and damage.describe() in said[0], said
    assert str(tmp_path) not in said[0]  # relative to the data dir, as the API shows it


def test_another_damage_of_the_same_session_is_logged_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        report_damage(tmp_path, SESSION, refusal(tmp_path))
        damage_report._known.clear()
        report_damage(tmp_path, SESSION, refusal(tmp_path, offset=2048))
    said = warnings(caplog)
    assert len(said) == 2 and "byte offset 2048" in said[1], said


def test_a_deleted_session_forgets_its_mark(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    report_damage(tmp_path, SESSION, refusal(tmp_path))
    assert damage_mark(tmp_path, SESSION).is_file()
    forget_damage(tmp_path, SESSION)
    assert not damage_mark(tmp_path, SESSION).exists()
    assert list(damage_mark(tmp_path, SESSION).parent.iterdir()) == []  # no temporaries left


@pytest.mark.filterwarnings(FORK_WITH_THREADS)  # a child only links a file and exits
def test_processes_finding_it_together_log_it_once(tmp_path: Path) -> None:
    mark = damage_mark(tmp_path, SESSION)
    children = []
    for _ in range(CLAIMERS):
        pid = os.fork()
        if pid == 0:  # a child: exit 0 when its claim was the first
            code = 1
            try:
                code = 0 if _claim(mark, "the damage") else 1
            finally:
                os._exit(code)
        children.append(pid)
    firsts = [os.waitpid(pid, 0)[1] == 0 for pid in children]
    assert firsts.count(True) == 1, firsts
    assert mark.read_text() == "the damage"
