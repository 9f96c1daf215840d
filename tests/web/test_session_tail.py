"""The shared tail of a session's newest Events, over a real journal and its real follower."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from brain.journal import JournalWriter, SessionReader
from brain.web.session_tail import SessionTail
from tests.journal.helpers import created, open_writer


def emit(writer: JournalWriter, count: int) -> list[int]:
    """Append `count` public Events (each with a private kv record before it); their sequences."""
    sequences = []
    for index in range(count):
        committed = writer.append([{"kind": "kv_put", "key": "k", "value": index},
                                   {"kind": "cancel_requested", "turn": index}])
        sequences.append(committed[-1]["seq"])
    return sequences


class CountingReader:
    """A real SessionReader whose followers count their journal reads."""

    def __init__(self, session_dir: Path) -> None:
        self.reader = SessionReader(session_dir)
        self.reads = 0

    def follower(self, after: int) -> Any:
        follower = self.reader.follower(after)
        original = follower.read

        def read(through: int | None = None) -> Any:
            self.reads += 1
            return original(through)

        follower.read = read
        return follower


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, JournalWriter]:
    path = tmp_path / "s"
    writer = open_writer(path)
    writer.append([created()])
    return path, writer


def test_streams_at_the_same_position_share_one_journal_read(session) -> None:  # type: ignore[no-untyped-def]
    path, writer = session
    reader = CountingReader(path)
    tail = SessionTail()
    start = writer.last_seq
    assert tail.read(start, None, reader.follower) == ([], start)
    new = emit(writer, 3)
    first, covered = tail.read(start, new[-1], reader.follower)
    second, _ = tail.read(start, new[-1], reader.follower)
    assert [e.sequence for e in first] == new == [e.sequence for e in second]
    assert covered == writer.last_seq
    assert reader.reads == 2  # the first (empty) read and one for the three Events, not three
    frame = first[0].frame.decode()
    assert frame.startswith(f"id: {new[0]}\nevent: cancel_requested\ndata: ")
    assert json.loads(frame.split("data: ", 1)[1])["sequence"] == new[0]


def test_a_hint_bounds_what_a_stream_gets(session) -> None:  # type: ignore[no-untyped-def]
    path, writer = session
    tail = SessionTail()
    start = writer.last_seq
    new = emit(writer, 4)
    ahead, _ = tail.read(start, None, SessionReader(path).follower)  # another stream read all
    assert len(ahead) == 4
    bounded, covered = tail.read(start, new[1], SessionReader(path).follower)
    assert [e.sequence for e in bounded] == new[:2] and covered == new[1]
    rest, _ = tail.read(new[1], None, SessionReader(path).follower)
    assert [e.sequence for e in rest] == new[2:]


def test_a_stream_older_than_the_tail_is_told_to_read_on_its_own(session) -> None:  # type: ignore[no-untyped-def]
    path, writer = session
    tail = SessionTail(capacity=4)
    start = writer.last_seq
    assert tail.read(start, None, SessionReader(path).follower) == ([], start)
    new = emit(writer, 10)
    held, _ = tail.read(new[-1] - 1, None, SessionReader(path).follower)
    assert [e.sequence for e in held] == [new[-1]]
    assert tail.read(start, None, SessionReader(path).follower) is None  # dropped from memory
    kept, _ = tail.read(new[-3], None, SessionReader(path).follower)
    assert [e.sequence for e in kept] == new[-2:]


def test_effect_terminals_carry_their_started(session) -> None:  # type: ignore[no-untyped-def]
    path, writer = session
    tail = SessionTail()
    start = writer.last_seq
    tail.read(start, None, SessionReader(path).follower)
    [began] = writer.append([{"kind": "model_call_started", "model": "m", "message_count": 1,
                              "context": {"through_sequence": 0, "delta": {"start": 0,
                                                                           "items": []}},
                              "tools": [], "options": {}}])
    writer.append([{"kind": "model_call_ended", "started": began["seq"], "outcome": "ok",
                    "result": {}}])
    events, _ = tail.read(start, None, SessionReader(path).follower)
    assert [(e.kind, e.started) for e in events] == [("model_call_started", None),
                                                    ("model_call_ended", began["seq"])]


def test_the_tail_is_bounded_in_bytes_too(session) -> None:  # type: ignore[no-untyped-def]
    path, writer = session
    tail = SessionTail(capacity=1000, max_bytes=4000)
    start = writer.last_seq
    tail.read(start, None, SessionReader(path).follower)
    new = []
    for index in range(10):
        [record] = writer.append([{"kind": "cancel_requested", "turn": index, "pad": "x" * 900}])
        new.append(record["seq"])
    held, _ = tail.read(new[-1] - 1, None, SessionReader(path).follower)
    assert [e.sequence for e in held] == [new[-1]]
    assert tail.read(start, None, SessionReader(path).follower) is None  # the oldest dropped
    assert tail.read(new[-4], None, SessionReader(path).follower) is None  # ~1 KB frames: 4 KB
