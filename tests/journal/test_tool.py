"""`brain journal verify` and `brain journal dump` (brain/journal/cli.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from brain.journal import (
    CorruptJournal,
    JournalScan,
    JournalWriter,
    SessionReader,
    load_checkpoint,
)
from brain.journal.checkpoint import encode_checkpoint
from brain.journal.cli import main
from tests.journal.helpers import (
    created,
    delta,
    message,
    open_writer,
    segments,
    without_room,
)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BRAIN_DATA_DIR", str(tmp_path))
    writer = open_writer(tmp_path / "sessions" / "s1", segment_bytes=512)
    writer.append([created(seeded=1), delta(0, [message("seed")])])
    for i in range(10):
        writer.append([{"kind": "kv_put", "key": f"k{i}", "value": i}])
    writer.append([{"kind": "turn_started", "input": "hi", "mode": "send"}])
    writer.write_checkpoint(SessionReader(tmp_path / "sessions" / "s1").projection())
    writer.close()
    without_room(tmp_path / "sessions" / "s1")
    return tmp_path


def test_verify_counts(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "s1"]) == 0
    out = capsys.readouterr().out
    assert "records     13" in out and "events      2" in out and "last_seq    13" in out
    assert "valid through 13" in out and "status      running" in out
    assert main(["verify", str(data_dir / "sessions" / "s1" / "journal")]) == 0


def test_verify_reports_first_problem_even_under_a_checkpoint(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = segments(data_dir / "sessions" / "s1")[0]
    data = bytearray(first.read_bytes())
    data[60] ^= 0x10
    first.write_bytes(bytes(data))
    assert main(["verify", "s1"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("CORRUPT") and first.name in out and "offset 32" in out


def test_verify_refuses_what_the_writer_open_refuses(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = data_dir / "sessions" / "s1"
    *_, frame, _last = JournalScan(session / "journal")  # under the checkpoint, not its frame
    target = session / "journal" / f"{frame.segment:020d}.seg"
    data = bytearray(target.read_bytes())
    data[frame.end - 1] ^= 0x01
    target.write_bytes(bytes(data))
    with pytest.raises(CorruptJournal) as refused:
        JournalWriter.open(session / "journal", segment_bytes=512)
    assert main(["verify", str(session)]) == 1
    out = capsys.readouterr().out
    assert out == f"CORRUPT {refused.value}\n"  # the refusal in the words every report uses
    assert out.startswith(f"CORRUPT {refused.value.path} at byte offset {refused.value.offset} ")


def test_verify_calls_a_checkpoint_with_other_history_checksums_stale(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = data_dir / "sessions" / "s1" / "checkpoint"
    cp, _ = load_checkpoint(path)
    wrong = tuple(d._replace(crc=d.crc ^ 1) for d in cp.history)
    path.write_bytes(encode_checkpoint(replace(cp, history=wrong), cp.projection))
    assert main(["verify", "s1"]) == 0
    assert "differ from its history checksum; it will be rebuilt" in capsys.readouterr().out
    JournalWriter.open(data_dir / "sessions" / "s1" / "journal", segment_bytes=512).close()
    assert main(["verify", "s1"]) == 0
    assert "valid through 13" in capsys.readouterr().out


def test_verify_notes_a_torn_tail_without_failing(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    last = segments(data_dir / "sessions" / "s1")[-1]
    last.write_bytes(last.read_bytes()[:-5])
    assert main(["verify", "s1"]) == 0
    out = capsys.readouterr().out
    assert "torn tail" in out and "last_seq    12" in out
    assert "stale" in out  # the checkpoint names the frame that tore
    writer = JournalWriter.open(data_dir / "sessions" / "s1" / "journal")
    assert writer.last_seq == 12  # truncated, checkpoint rebuilt
    writer.close()
    assert main(["verify", "s1"]) == 0
    assert "valid through 12" in capsys.readouterr().out


def test_verify_missing_session(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "nope"]) == 1
    assert "no journal" in capsys.readouterr().out


def test_dump(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", "s1", "--from", "12", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [12, 13]
    assert main(["dump", "s1"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert len(text) == 13 and "session_created" in text[0] and "Z" in text[0]


def test_verify_reports_the_room_after_the_last_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BRAIN_DATA_DIR", str(tmp_path))
    writer = open_writer(tmp_path / "sessions" / "s2")
    writer.append([created(seeded=1), delta(0, [message("seed")])])
    writer.close()
    assert main(["verify", "s2"]) == 0
    out = capsys.readouterr().out
    assert "room        " in out and "torn" not in out and "last_seq    2" in out
