"""What a session actor keeps of the sessions it released (brain/actors/session/kept_journal.py),
on real journals: a suspended turn is kept only with its whole history and taken up only for
that turn; the cache forgets its oldest sessions first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from brain.actors.session import kept_journal
from brain.actors.session.kept_journal import KeptJournals, keep, take_up
from brain.journal import JournalWriter
from brain.sessions.state import Turn
from tests.journal.helpers import created

BEFORE = "the projection before the turn"  # kept as given; only the records are checked


def released(root: Path, name: str, turn: bool = False) -> tuple[JournalWriter, Any, Any]:
    """A session's closed writer, its projection, and (`turn`) its open turn's history."""
    journal = root / name / "journal"
    journal.parent.mkdir(parents=True)
    writer = JournalWriter.open(journal, project=True)
    writer.append([created()])
    timeline = None
    if turn:
        committed = writer.append([{"kind": "turn_started", "input": "hi", "mode": "send"}])
        timeline = (BEFORE, list(committed))
    writer.close()
    with JournalWriter.open(journal, project=True) as again:  # writes nothing: reusable
        projection = again.opened
    return writer, projection, timeline


def test_an_idle_session_is_kept_and_taken_up_for_its_next_open(tmp_path: Path) -> None:
    writer, projection, _ = released(tmp_path, "s")
    kept = keep("s", writer, projection)
    assert kept is not None
    assert take_up(kept, "other") is None
    assert take_up(kept, "s", Turn(2, 3, None)) is None, "no suspended turn was kept"
    assert take_up(kept, "s") == (writer, projection, None)
    writer.close()


def test_a_suspended_turn_is_kept_only_with_its_history_and_only_for_itself(
        tmp_path: Path) -> None:
    writer, projection, timeline = released(tmp_path, "s", turn=True)
    turn = Turn(2, 3, None)
    assert keep("s", writer, projection) is None, "an open turn needs its history"
    assert keep("s", writer, projection, turn) is None
    assert keep("s", writer, projection, Turn(1, 3, None), timeline) is None, "another turn's"
    short = (BEFORE, timeline[1][:0])
    assert keep("s", writer, projection, turn, short) is None, "a history missing records"
    kept = keep("s", writer, projection, turn, timeline)
    assert kept is not None
    assert take_up(kept, "s") is None, "an open without the turn opens it fully"
    assert take_up(kept, "s", Turn(5, 6, None)) is None
    assert take_up(kept, "s", turn) == (writer, projection, timeline)
    writer.close()


def test_the_cache_forgets_its_oldest_sessions_first(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept_journal, "KEPT_SESSIONS", 2)
    cache = KeptJournals()
    writers = {}
    for name in ("a", "b", "c"):
        writer, projection, _ = released(tmp_path, name)
        writers[name] = writer
        cache.put(keep(name, writer, projection), name)
    assert len(cache) == 2 and cache.pop("a") is None
    assert cache.pop("b").writer is writers["b"] and len(cache) == 1
    cache.put(None, "c")  # released again with nothing worth keeping: the old entry goes
    assert len(cache) == 0 and cache.pop("c") is None


def test_the_cache_holds_at_most_its_bytes(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    writer, projection, _ = released(tmp_path, "a")
    monkeypatch.setattr(kept_journal, "KEPT_BYTES", writer.journal_bytes)
    cache = KeptJournals()
    cache.put(keep("a", writer, projection), "a")
    other, other_projection, _ = released(tmp_path, "b")
    cache.put(keep("b", other, other_projection), "b")
    assert cache.pop("a") is None and cache.pop("b") is not None


def test_a_long_conversation_is_kept_up_to_half_the_cache(tmp_path: Path) -> None:
    """Past a megabyte of journal (about 400 turns of a 512-byte answer) a full open costs
    several ms, and grows with the conversation: that session is the one worth keeping."""
    journal = tmp_path / "s" / "journal"
    journal.parent.mkdir(parents=True)
    answer = "x" * (512 << 10)
    with JournalWriter.open(journal, project=True) as writer:
        writer.append([created()])
        for _ in range(4):  # 2 MiB of kv records: over the old 1 MiB cap, under half the cache
            writer.append([{"kind": "kv_put", "key": "k", "value": answer}])
    with JournalWriter.open(journal, project=True) as again:
        projection = again.opened
    assert (1 << 20) < writer.journal_bytes <= kept_journal.KEEP_MAX_BYTES
    assert kept_journal.KEEP_MAX_BYTES * 2 <= kept_journal.KEPT_BYTES
    assert keep("s", writer, projection) is not None
    with JournalWriter.open(journal, project=True) as writer:
        for _ in range(5):  # past half the cache: one session would push out all the others
            writer.append([{"kind": "kv_put", "key": "k", "value": answer}])
    with JournalWriter.open(journal, project=True) as again:
        projection = again.opened
    assert writer.journal_bytes > kept_journal.KEEP_MAX_BYTES
    assert keep("s", writer, projection) is None
