"""Checkpoints are a cache: missing, damaged or stale ones are rebuilt from the journal, which
always wins, and a fresh one gives exactly the projection a full replay gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from brain.journal import JournalWriter, Projection, SessionReader, fold_all, load_checkpoint
from brain.journal.checkpoint import HEADER_SIZE
from tests.journal.helpers import created, delta, message, open_writer, segments


def build(session_dir: Path, turns: int = 40, segment_bytes: int = 4096) -> Projection:
    """A session with turns, transcript edits and kv; returns the in-memory fold."""
    writer = open_writer(session_dir, segment_bytes=segment_bytes)
    records = writer.append([created(seeded=1), delta(0, [message("seed")])])
    length = 1
    for i in range(turns):
        [turn] = writer.append([{"kind": "turn_started", "input": f"q{i}", "mode": "send"}])
        records.append(turn)
        records += writer.append([delta(length, [message(f"q{i}"), message(f"a{i}", "x")])])
        length += 2
        if i % 7 == 3:
            records += writer.append([delta(1, [message(f"summary {i}")])])
            length = 2
        records += writer.append([{"kind": "kv_put", "key": f"k{i % 5}", "value": i}])
        if i % 4 == 0:
            records += writer.append([{"kind": "kv_delete", "key": "k0"}])
        records += writer.append([{"kind": "turn_ended", "started": turn["seq"], "output": i}])
    projection = fold_all(Projection.empty(), records)
    writer.write_checkpoint(projection)
    writer.close()
    return projection


def test_fresh_checkpoint_equals_full_replay(tmp_path: Path) -> None:
    expected = build(tmp_path)
    reader = SessionReader(tmp_path)
    assert reader.projection() == expected
    replay = SessionReader(tmp_path, checkpoint_path=tmp_path / "absent").projection()
    assert replay == expected
    cp, why = load_checkpoint(tmp_path / "checkpoint")
    assert cp is not None and cp.seq == expected.last_seq, why
    assert cp.projection == expected


def test_checkpoint_plus_tail(tmp_path: Path) -> None:
    expected = build(tmp_path)
    writer = open_writer(tmp_path, segment_bytes=4096)
    more = writer.append([{"kind": "kv_put", "key": "after", "value": None}])
    writer.close()
    assert load_checkpoint(tmp_path / "checkpoint")[0].seq == expected.last_seq
    assert SessionReader(tmp_path).projection() == fold_all(expected, more)


def corrupt_checkpoint(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["header", "meta", "body", "truncated", "garbage"])
def test_damaged_checkpoint_is_rebuilt(tmp_path: Path, where: str) -> None:
    expected = build(tmp_path)
    path = tmp_path / "checkpoint"
    good = path.read_bytes()
    if where == "header":
        corrupt_checkpoint(path, 3)
    elif where == "meta":
        corrupt_checkpoint(path, HEADER_SIZE + 5)
    elif where == "body":
        corrupt_checkpoint(path, len(good) - 10)
    elif where == "truncated":
        path.write_bytes(good[:-1])
    else:
        path.write_bytes(b"not a checkpoint at all")
    assert load_checkpoint(path)[0] is None
    assert SessionReader(tmp_path).projection() == expected  # the reader never writes
    assert path.read_bytes() != good
    JournalWriter.open(tmp_path / "journal", segment_bytes=4096).close()  # rebuilds, rewrites
    assert path.read_bytes() == good
    assert SessionReader(tmp_path).projection() == expected


def test_missing_checkpoint_is_rebuilt_on_open(tmp_path: Path) -> None:
    expected = build(tmp_path)
    (tmp_path / "checkpoint").unlink()
    assert SessionReader(tmp_path).projection() == expected
    JournalWriter.open(tmp_path / "journal").close()
    assert load_checkpoint(tmp_path / "checkpoint")[0].projection == expected


def test_stale_checkpoint_beyond_the_journal_is_rebuilt(tmp_path: Path) -> None:
    build(tmp_path / "short", turns=3)
    expected_short = SessionReader(tmp_path / "short").projection()
    build(tmp_path / "long", turns=30)
    # the long session's checkpoint beside the short session's journal: sequence beyond it
    shutil.copy(tmp_path / "long" / "checkpoint", tmp_path / "short" / "checkpoint")
    assert SessionReader(tmp_path / "short").projection() == expected_short
    JournalWriter.open(tmp_path / "short" / "journal", segment_bytes=4096).close()
    assert load_checkpoint(tmp_path / "short" / "checkpoint")[0].projection == expected_short


def test_stale_checkpoint_with_mismatched_position_is_rebuilt(tmp_path: Path) -> None:
    expected = build(tmp_path / "a", turns=10)
    # Same sequence numbers, different bytes: session b's checkpoint does not match a's frames.
    writer = open_writer(tmp_path / "b")
    writer.append([created(seeded=1), delta(0, [message("other")])])
    for _ in range(expected.last_seq - 2):
        writer.append([{"kind": "kv_put", "key": "z", "value": "other"}])
    assert writer.last_seq == expected.last_seq
    writer.write_checkpoint(SessionReader(tmp_path / "b").projection())
    writer.close()
    shutil.copy(tmp_path / "b" / "checkpoint", tmp_path / "a" / "checkpoint")
    assert SessionReader(tmp_path / "a").projection() == expected
    assert SessionReader(tmp_path / "a").transcript()["messages"] == expected.transcript


def test_journal_rewritten_shorter_makes_checkpoint_stale(tmp_path: Path) -> None:
    build(tmp_path / "s", turns=5)
    saved = tmp_path / "saved"
    shutil.copytree(tmp_path / "s" / "journal", saved)
    writer = open_writer(tmp_path / "s", segment_bytes=4096)
    writer.append([{"kind": "kv_put", "key": "late", "value": 1}])
    writer.write_checkpoint(SessionReader(tmp_path / "s").projection())
    writer.close()
    shutil.rmtree(tmp_path / "s" / "journal")
    shutil.copytree(saved, tmp_path / "s" / "journal")  # the journal lost its last record
    projection = SessionReader(tmp_path / "s").projection()
    assert "late" not in projection.kv


def test_event_pages_identical_with_and_without_checkpoint(tmp_path: Path) -> None:
    build(tmp_path, turns=200, segment_bytes=16384)
    assert len(segments(tmp_path)) > 3
    with_cp = SessionReader(tmp_path)
    without = SessionReader(tmp_path, checkpoint_path=tmp_path / "absent")
    last = with_cp.projection().last_seq
    for after in [0, 1, 2, 255, 256, 257, 300, 511, 777, last - 3, last, last + 5]:
        for limit in (1, 5, 1000):
            assert with_cp.events_page(after, limit) == without.events_page(after, limit)


def test_lying_seek_index_is_ignored(tmp_path: Path) -> None:
    build(tmp_path, turns=100)
    path = tmp_path / "checkpoint"
    good = SessionReader(tmp_path, checkpoint_path=tmp_path / "absent").events_page(300, 20)
    from brain.journal.checkpoint import Checkpoint, SeekPoint, encode_checkpoint

    cp, _ = load_checkpoint(path)
    bad_index = tuple(
        SeekPoint(p.seq, p.segment, p.offset + 3, p.transcript_length) for p in cp.index
    )
    lying = Checkpoint(
        cp.seq, cp.segment, cp.offset, cp.crc, cp.at, cp.transcript_length, bad_index, None
    )
    path.write_bytes(encode_checkpoint(lying, cp.projection))
    assert SessionReader(tmp_path).events_page(300, 20) == good
