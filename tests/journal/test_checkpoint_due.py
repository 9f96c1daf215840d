"""The checkpoint is written when due (records or bytes since the last one), not per turn, and
the writer's open folds the projection once (checkpoint + tail), exactly as a reader does."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain.journal import SessionReader, fold_all, load_checkpoint
from brain.journal.writer import CHECKPOINT_BYTES, CHECKPOINT_RECORDS
from tests.journal.helpers import created, delta, message, open_writer
from tests.journal.test_checkpoint import build, corrupt_checkpoint


def small_session(session_dir: Path, turns: int) -> None:
    """A session of `turns` turns of 4 records each, with no checkpoint written."""
    writer = open_writer(session_dir)
    writer.append([created(), delta(0, [message("seed")])])
    for i in range(turns):
        [turn] = writer.append([{"kind": "turn_started", "input": f"q{i}", "mode": "send"}])
        writer.append([delta(1 + 2 * i, [message(f"q{i}"), message(f"a{i}", "assistant")])])
        writer.append([{"kind": "kv_put", "key": "k", "value": i},
                       {"kind": "turn_ended", "started": turn["seq"], "output": i}])
    writer.close()


@pytest.mark.parametrize("checkpoint", ["fresh", "missing", "damaged"])
def test_the_open_folds_what_a_reader_folds(tmp_path: Path, checkpoint: str) -> None:
    expected = build(tmp_path)
    writer = open_writer(tmp_path, segment_bytes=4096)
    tail = writer.append([{"kind": "kv_put", "key": "after", "value": [1, 2]},
                          delta(2, [message("edited")])])
    writer.close()
    expected = fold_all(expected, tail)
    if checkpoint == "missing":
        (tmp_path / "checkpoint").unlink()
    elif checkpoint == "damaged":
        corrupt_checkpoint(tmp_path / "checkpoint", -3)
    writer = open_writer(tmp_path, segment_bytes=4096, project=True)
    try:
        assert writer.opened == expected
        assert writer.opened == SessionReader(tmp_path).projection()
    finally:
        writer.close()


def test_an_open_without_project_folds_nothing(tmp_path: Path) -> None:
    build(tmp_path, turns=3)
    writer = open_writer(tmp_path, segment_bytes=4096)
    try:
        assert writer.opened is None
    finally:
        writer.close()


def test_a_missing_checkpoint_is_written_only_once_due(tmp_path: Path) -> None:
    small_session(tmp_path, turns=3)  # 14 records: replaying them beats writing a checkpoint
    writer = open_writer(tmp_path, project=True)
    writer.close()
    assert not (tmp_path / "checkpoint").exists()
    assert writer.records_since_checkpoint == 14 and not writer.checkpoint_due

    small_session(tmp_path / "long", turns=CHECKPOINT_RECORDS // 4)
    writer = open_writer(tmp_path / "long", project=True)
    writer.close()
    cp, why = load_checkpoint(tmp_path / "long" / "checkpoint")
    assert cp is not None and cp.seq == writer.last_seq, why
    assert cp.projection == writer.opened
    assert writer.records_since_checkpoint == 0


def test_due_by_records_after_the_last_checkpoint(tmp_path: Path) -> None:
    expected = build(tmp_path, turns=2)
    writer = open_writer(tmp_path)
    try:
        assert writer.records_since_checkpoint == 0 and not writer.checkpoint_due
        for i in range(CHECKPOINT_RECORDS - 1):
            expected = fold_all(expected, writer.append([{"kind": "kv_put", "key": "n",
                                                          "value": i}]))
        assert not writer.checkpoint_due
        expected = fold_all(expected, writer.append([{"kind": "kv_delete", "key": "n"}]))
        assert writer.checkpoint_due
        writer.write_checkpoint(expected)
        assert writer.records_since_checkpoint == 0 and not writer.checkpoint_due
    finally:
        writer.close()
    # A reopen counts the tail after the checkpoint on disk.
    writer = open_writer(tmp_path)
    try:
        writer.append([{"kind": "kv_put", "key": "x", "value": 1}] * 3)
        writer.close()
        writer = open_writer(tmp_path)
        assert writer.records_since_checkpoint == 3
    finally:
        writer.close()


def test_due_by_bytes(tmp_path: Path) -> None:
    build(tmp_path, turns=2)
    writer = open_writer(tmp_path)
    try:
        writer.append([{"kind": "kv_put", "key": "big", "value": "x" * CHECKPOINT_BYTES}])
        assert writer.records_since_checkpoint == 1 and writer.checkpoint_due
    finally:
        writer.close()
