"""A fork's create command, decided from the parent's projection (brain/sessions/fork.py), and
the parent's journal read at a sequence (brain/journal/projection_at.py), on real journals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from brain import errors
from brain.journal import JournalWriter, SessionReader
from brain.journal.projection_at import projection_at
from brain.protocol.messages import CreateSession
from brain.sessions import records
from brain.sessions.fork import fork_command, refuse_past_end

CONFIG = {"agentloop": {"name": "default"}, "model": {"name": "scripted"}, "tools": [],
          "environments": [], "idle_ttl_ms": None, "metadata": {"m": 1}}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def delta(start: int, *items: Any) -> dict[str, Any]:
    return records.transcript_changed({"start": start, "items": list(items),
                                       "length": start + len(items)})


def parent_journal(session_dir: Path) -> None:
    """1-2 create (seeded), 3-9 a turn, 10-11 a turn left open (as a crash would leave it)."""
    writer = JournalWriter.open(session_dir / "journal")
    try:
        writer.append([records.session_created(CONFIG, 1), delta(0, user("seed"))])
        writer.append([records.turn_started("one", "send"), records.activation_started("d", 3)])
        writer.append([delta(1, user("one")), records.kv_put("k", 1)])
        writer.append([records.kv_put("gone", True)])
        writer.append([records.activation_ended(4), records.turn_ended(3, "ok")])
        writer.append([records.turn_started("two", "send")])
        writer.append([records.kv_delete("gone")])
    finally:
        writer.close()


def fork_of(parent_id: str, parent_dir: Path, last_sequence: int,
            at_sequence: int) -> CreateSession:
    """As POST /v1/sessions/{id}/forks decides it: the status's last sequence first, then the
    parent's journal read at the sequence."""
    refuse_past_end(at_sequence, last_sequence)
    at = projection_at(parent_dir, at_sequence)
    return fork_command(parent_id, at.record, at.batch, at_sequence)


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    session_dir = tmp_path / "parent"
    parent_journal(session_dir)
    return session_dir


def test_a_fork_between_turns_copies_config_transcript_and_kv(parent: Path) -> None:
    create = fork_of("p", parent, 11, 9)
    assert create.config == CONFIG
    assert create.transcript == [user("seed"), user("one")]
    assert create.kv == {"k": 1, "gone": True}
    assert create.forked_from == {"session_id": "p", "sequence": 9}


def test_a_fork_at_a_record_takes_the_whole_batch_it_was_committed_in(parent: Path) -> None:
    at = projection_at(parent, 1)
    assert (at.record.last_seq, at.batch.last_seq) == (1, 2)
    assert fork_of("p", parent, 11, 1).transcript == [user("seed")]


@pytest.mark.parametrize("inside", [3, 4, 5, 6, 7, 8, 10, 11])
def test_a_fork_inside_a_turn_is_refused(parent: Path, inside: int) -> None:
    with pytest.raises(errors.ForkInsideTurn, match="turn that started at"):
        fork_of("p", parent, 11, inside)


def test_a_fork_past_the_end_is_refused(parent: Path) -> None:
    with pytest.raises(errors.SequenceBeyondEnd, match=r"\(11\)"):
        fork_of("p", parent, 11, 12)
    with pytest.raises(errors.SequenceBeyondEnd):  # the status read was newer than the journal
        fork_of("p", parent, 13, 12)


def test_the_checkpoint_is_a_starting_point_only_at_or_before_the_sequence(
        tmp_path: Path) -> None:
    session_dir = tmp_path / "s"
    writer = JournalWriter.open(session_dir / "journal")
    try:
        writer.append([records.session_created(CONFIG, 0)])
        writer.append([records.kv_put("k", 1)])
        writer.write_checkpoint(SessionReader(session_dir).projection())
        writer.append([records.kv_put("k", 2)])
    finally:
        writer.close()
    assert (session_dir / "checkpoint").is_file()
    assert projection_at(session_dir, 1).batch.kv == {}
    assert projection_at(session_dir, 2).batch.kv == {"k": 1}
    assert projection_at(session_dir, 3).batch.kv == {"k": 2}
    assert projection_at(session_dir, 4).batch.last_seq == 3
