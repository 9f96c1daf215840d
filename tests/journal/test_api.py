"""The public API the rest of Brain calls: append, reopen, status, transcript, Event pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain.journal import (
    CorruptJournal,
    InvalidRecord,
    JournalError,
    JournalLocked,
    JournalNotFound,
    JournalWriter,
    Projection,
    SessionReader,
    fold,
    fold_all,
)
from tests.journal.helpers import created, delta, message, open_writer, segments
from tests.support.forking import FORK_WITH_THREADS


def test_append_assigns_seq_and_at_and_survives_reopen(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    assert writer.last_seq == 0
    first = writer.append([created(), delta(0, [message("hi")])])
    assert [r["seq"] for r in first] == [1, 2]
    assert first[0]["at"] == first[1]["at"]
    assert list(first[0])[:3] == ["seq", "kind", "at"]
    second = writer.append([{"kind": "kv_put", "key": "k", "value": None}])
    assert second[0]["seq"] == 3 and second[0]["at"] >= first[0]["at"]
    writer.close()

    writer = open_writer(tmp_path)
    assert writer.last_seq == 3
    assert writer.append([{"kind": "kv_delete", "key": "k"}])[0]["seq"] == 4
    writer.close()
    projection = SessionReader(tmp_path).projection()
    assert projection.last_seq == 4 and projection.kv == {}


def test_records_cannot_choose_their_own_seq(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    [record] = writer.append([{"kind": "session_created", "seq": 99, "at": 5, "config": {}}])
    assert record["seq"] == 1 and record["at"] != 5
    writer.close()


def test_invalid_records_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    writer.append([created()])
    with pytest.raises(InvalidRecord):
        writer.append([{"kind": "kv_put", "key": "a", "value": 1}, {"no": "kind"}])
    with pytest.raises(InvalidRecord):
        writer.append([{"kind": "kv_put", "key": "a", "value": object()}])
    with pytest.raises(InvalidRecord):
        writer.append([delta(3, [message("gap")])])  # starts past the saved length
    assert writer.append([{"kind": "kv_put", "key": "a", "value": 1}])[0]["seq"] == 2
    writer.close()


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    with pytest.raises(JournalLocked):
        open_writer(tmp_path)
    writer.close()
    open_writer(tmp_path).close()


def test_closed_writer_refuses(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    writer.close()
    writer.close()
    with pytest.raises(JournalError):
        writer.append([created()])


def test_reader_of_missing_session(tmp_path: Path) -> None:
    with pytest.raises(JournalNotFound):
        SessionReader(tmp_path / "nope").status()


def test_segments_roll_and_keep_one_sequence(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, segment_bytes=1024)
    writer.append([created()])
    for i in range(40):
        writer.append([{"kind": "kv_put", "key": f"k{i}", "value": "v" * 50}])
    writer.close()
    files = segments(tmp_path)
    assert len(files) > 3
    assert files[0].name == f"{1:020d}.seg"
    firsts = [int(f.name[:20]) for f in files]
    assert firsts == sorted(firsts)
    assert all(f.stat().st_size <= 1024 for f in files)
    projection = SessionReader(tmp_path).projection()
    assert projection.last_seq == 41 and len(projection.kv) == 40
    writer = open_writer(tmp_path, segment_bytes=1024)
    assert writer.last_seq == 41
    writer.close()


def test_a_batch_larger_than_a_segment_gets_a_segment_alone(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, segment_bytes=512)
    writer.append([created()])
    writer.append([{"kind": "kv_put", "key": "big", "value": "x" * 2000}] * 3)
    writer.append([{"kind": "kv_delete", "key": "big"}])
    writer.close()
    assert [int(f.name[:20]) for f in segments(tmp_path)] == [1, 2, 5]
    assert SessionReader(tmp_path).projection().last_seq == 5


def test_status_lifecycle(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    reader = SessionReader(tmp_path)
    assert reader.status()["status"] == "creating"  # the directory exists, nothing committed
    writer.append([created(environments=["work"])])
    assert reader.status()["status"] == "creating"
    [setup] = writer.append(
        [{"kind": "environment_op_started", "environment": "work", "op": "setup", "request": {}}]
    )
    assert reader.status()["status"] == "creating"
    writer.append(
        [{"kind": "environment_op_ended", "started": setup["seq"], "result": {}, "outcome": "ok"}]
    )
    status = reader.status()
    assert status["status"] == "idle" and status["turn"] is None
    assert status["created_at"].endswith("Z") and len(status["created_at"]) == 24
    [turn] = writer.append([{"kind": "turn_started", "input": "hi", "mode": "send"}])
    status = reader.status()
    assert status["status"] == "running"
    assert status["turn"] == {"sequence": turn["seq"], "status": "running"}
    error = {"code": "agentloop_error", "message": "boom"}
    writer.append([{"kind": "turn_failed", "started": turn["seq"], "error": error}])
    status = reader.status()
    assert status["status"] == "idle"
    assert status["turn"] == {"sequence": turn["seq"], "status": "failed", "error": error}
    assert status["last_sequence"] == 5
    writer.append([{"kind": "session_ending"}])
    assert reader.status()["status"] == "ending"
    writer.append([{"kind": "session_ended"}])
    assert reader.status()["status"] == "ended"
    writer.close()


def test_setup_failure_then_session_failed(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    writer.append([created(environments=["a", "b"])])
    [a] = writer.append(
        [{"kind": "environment_op_started", "environment": "a", "op": "setup", "request": {}}]
    )
    writer.append(
        [{"kind": "environment_op_ended", "started": a["seq"], "result": {}, "outcome": "ok"}]
    )
    assert SessionReader(tmp_path).status()["status"] == "creating"  # b is not set up yet
    [b] = writer.append(
        [{"kind": "environment_op_started", "environment": "b", "op": "setup", "request": {}}]
    )
    writer.append(
        [
            {"kind": "environment_op_failed", "started": b["seq"], "error": {}, "outcome": "error"},
            {"kind": "session_failed", "error": {"code": "creation", "message": "b"}},
        ]
    )
    assert SessionReader(tmp_path).status()["status"] == "failed"
    writer.close()


def test_unfinished_work_is_tracked_for_restart_recovery() -> None:
    records = [
        created(),
        {"kind": "turn_started", "input": "x", "mode": "submit"},
        {"kind": "activation_started", "agentloop": "default", "turn": 2},
        {
            "kind": "model_call_started",
            "model": "m",
            "message_count": 1,
            "context": {"through_sequence": 3, "delta": {"start": 0, "items": []}},
            "tools": [],
            "options": {},
        },
        {
            "kind": "tool_call_started",
            "tool": "echo",
            "invocation": {"id": "a", "input": {}},
            "deadline": 1,
        },
        {"kind": "model_call_ended", "started": 4, "result": {}, "outcome": "ok"},
    ]
    projection = Projection.empty()
    for seq, fields in enumerate(records, 1):
        projection = fold(projection, {"seq": seq, "at": 1000 + seq, **fields})
    assert projection.open_turn == 2
    assert projection.open_activation == 3
    assert projection.unfinished_effects == {3: "activation_started", 5: "tool_call_started"}
    assert projection.status == "running"


def test_fold_is_pure() -> None:
    base = fold_all(
        Projection.empty(),
        [
            {"seq": 1, "at": 1, **created()},
            {"seq": 2, "at": 2, **delta(0, [message("a")])},
            {"seq": 3, "at": 3, "kind": "kv_put", "key": "k", "value": 1},
        ],
    )
    after = fold(base, {"seq": 4, "at": 4, **delta(1, [message("b")])})
    after = fold(after, {"seq": 5, "at": 5, "kind": "kv_put", "key": "j", "value": None})
    assert base.transcript == [message("a")] and base.kv == {"k": 1}
    assert after.transcript == [message("a"), message("b")]
    assert after.kv == {"k": 1, "j": None}
    assert "j" in after.kv and "z" not in after.kv  # stored null differs from missing
    with pytest.raises(InvalidRecord):
        fold(after, {"seq": 9, "at": 9, "kind": "kv_delete", "key": "k"})


def test_transcript_fold_and_through_sequence(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    writer.append([created(seeded=1), delta(0, [message("seed")])])
    writer.append([delta(1, [message("q"), message("a", "assistant")])])
    writer.append([{"kind": "kv_put", "key": "k", "value": 1}])
    writer.append([delta(1, [message("summary", "assistant")])])
    writer.close()
    assert SessionReader(tmp_path).transcript() == {
        "messages": [message("seed"), message("summary", "assistant")],
        "through_sequence": 5,
    }


def test_events_are_public_records_with_envelopes(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    writer.append([created(seeded=1), delta(0, [message("seed")])])  # 1, 2
    writer.append([{"kind": "turn_started", "input": "hi", "mode": "send"}])  # 3
    writer.append([delta(1, [message("hi")])])  # 4: pure append, private
    writer.append([{"kind": "kv_put", "key": "k", "value": 1}])  # 5: private
    writer.append(
        [
            {
                "kind": "extension_event",
                "name": "progress",
                "data": {"pct": 5},
                "origin": {"kind": "agentloop", "sequence": 3},
            }
        ]
    )  # 6
    writer.append([delta(0, [message("short")])])  # 7: replaces → transcript_replaced
    writer.append([{"kind": "extension_event", "name": "old", "data": 1}])  # 8: no origin
    writer.append([{"kind": "turn_ended", "started": 3, "output": "done"}])  # 9
    writer.close()
    page = SessionReader(tmp_path).events_page(0, 1000)
    assert page["has_more"] is False and page["next_after"] == 9
    events = page["events"]
    assert [(e["sequence"], e["kind"]) for e in events] == [
        (1, "session_created"),
        (3, "turn_started"),
        (6, "progress"),
        (7, "transcript_replaced"),
        (8, "old"),
        (9, "turn_ended"),
    ]
    assert events[1]["data"] == {"input": "hi", "mode": "send"}
    assert events[2]["data"] == {"pct": 5}
    assert events[2]["origin"] == {"kind": "agentloop", "sequence": 3}
    assert "origin" not in events[4] and "origin" not in events[0]
    assert events[3]["data"] == {"start": 0, "items": [message("short")], "length": 1}
    assert all(e["at"].endswith("Z") for e in events)
    assert set(events[0]) == {"sequence", "kind", "at", "data"}


def test_events_page_cursor_and_limit(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    writer.append([created()])
    for i in range(30):
        writer.append(
            [
                {"kind": "turn_started", "input": str(i), "mode": "send"},
                {"kind": "kv_put", "key": "k", "value": i},
            ]
        )
        writer.append([{"kind": "turn_ended", "started": 2 + 3 * i, "output": i}])
    writer.close()
    reader = SessionReader(tmp_path)
    seen, after = [], 0
    while True:
        page = reader.events_page(after, 7)
        assert len(page["events"]) <= 7
        seen += [e["sequence"] for e in page["events"]]
        after = page["next_after"]
        if not page["has_more"]:
            break
    assert seen == [1] + [s for i in range(30) for s in (2 + 3 * i, 4 + 3 * i)]
    assert reader.events_page(after, 10) == {"events": [], "next_after": after, "has_more": False}
    assert [e["sequence"] for e in reader.events_after(85)] == [86, 88, 89, 91]
    with pytest.raises(ValueError):
        reader.events_page(0, 0)
    with pytest.raises(ValueError):
        reader.events_page(0, 1001)


def test_page_byte_bound_and_lone_large_event(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    writer.append([created()])
    big = "x" * (3 << 20)
    for _ in range(3):
        writer.append([{"kind": "turn_started", "input": big, "mode": "send"}])
    writer.append([{"kind": "turn_started", "input": "y" * (9 << 20), "mode": "send"}])
    writer.append([{"kind": "session_ending"}])
    writer.close()
    reader = SessionReader(tmp_path)
    page = reader.events_page(0, 1000)
    assert [e["sequence"] for e in page["events"]] == [1, 2, 3]  # 4th would pass 8 MiB
    assert page["has_more"]
    page = reader.events_page(3, 1000)
    assert [e["sequence"] for e in page["events"]] == [4]
    page = reader.events_page(4, 1000)
    assert [e["sequence"] for e in page["events"]] == [5]  # alone: larger than 8 MiB
    assert page["has_more"]
    page = reader.events_page(5, 1000)
    assert [e["sequence"] for e in page["events"]] == [6] and not page["has_more"]


def test_writer_checkpoint_then_reader_uses_it(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    committed = writer.append([created(seeded=1), delta(0, [message("seed")])])
    projection = fold_all(Projection.empty(), committed)
    writer.write_checkpoint(projection)
    assert (tmp_path / "checkpoint").is_file()
    with pytest.raises(JournalError):
        writer.write_checkpoint(Projection.empty())
    committed = writer.append([{"kind": "kv_put", "key": "a", "value": [1]}])
    writer.close()
    expected = fold_all(projection, committed)
    assert SessionReader(tmp_path).projection() == expected


def test_corrupt_journal_names_file_offset_and_seq(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    writer.append([created()])
    writer.append([{"kind": "turn_started", "input": "hello", "mode": "send"}])
    writer.append([{"kind": "session_ending"}])
    writer.close()
    [path] = segments(tmp_path)
    data = bytearray(path.read_bytes())
    where = data.index(b"hello")
    data[where] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptJournal) as info:
        JournalWriter.open(tmp_path / "journal")
    error = info.value
    assert error.path == str(path) and error.seq == 2 and "checksum" in error.reason
    assert error.offset < where
    reader = SessionReader(tmp_path)
    status = reader.status()
    assert status["status"] == "damaged" and status["last_sequence"] == 1
    with pytest.raises(CorruptJournal):
        reader.transcript()
    with pytest.raises(CorruptJournal):
        reader.events_page(0, 10)


def test_failed_fdatasync_poisons_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import brain.journal.writer as writer_module
    from brain.journal import WriterBroken

    writer = open_writer(tmp_path)
    writer.append([created()])

    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(writer_module.os, "fdatasync", failing)
    with pytest.raises(WriterBroken):
        writer.append([{"kind": "kv_put", "key": "a", "value": 1}])
    monkeypatch.undo()
    with pytest.raises(WriterBroken):  # never retried on the same descriptor
        writer.append([{"kind": "kv_put", "key": "a", "value": 1}])
    writer.close()
    writer = open_writer(tmp_path)  # reopening recovers whatever reached the file
    assert writer.last_seq in (1, 2)
    writer.close()


# The child only calls the inherited writer (refused by its pid check) and leaves by os._exit.
@pytest.mark.filterwarnings(FORK_WITH_THREADS)
def test_a_forked_child_cannot_use_or_hold_the_parents_writer(tmp_path: Path) -> None:
    import os

    writer = open_writer(tmp_path)
    writer.append([created()])
    pid = os.fork()
    if pid == 0:  # child: the inherited writer is unusable; exit without running pytest code
        try:
            writer.append([{"kind": "kv_put", "key": "x", "value": 1}])
            os._exit(1)
        except JournalError:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    writer.close()
    open_writer(tmp_path).close()  # the lock went with the parent's close


def test_the_fold_has_one_entry_per_record_name_and_refuses_any_other_kind() -> None:
    """The fold dispatches on kind by a table: a kind outside it is an error, never skipped."""
    from brain.journal import RECORD_NAMES, InvalidRecord, empty_projection, fold
    from brain.journal.projection import _FOLDERS

    assert set(_FOLDERS) == RECORD_NAMES
    with pytest.raises(InvalidRecord, match="unknown kind 'model_call_retried'"):
        fold(empty_projection(), {"seq": 1, "at": 0, "kind": "model_call_retried"})
