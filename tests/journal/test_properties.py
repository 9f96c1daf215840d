"""Property tests: whatever the records and batch boundaries, what the disk gives back after a
reopen folds to exactly what the in-memory fold of the committed records gives."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brain.journal import JournalWriter, Projection, SessionReader, fold, fold_all, to_event
from tests.journal.helpers import Clock, created

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                               max_size=3),
    max_leaves=6,
)  # fmt: skip
messages = st.builds(
    lambda role, text: {"role": role, "content": [{"type": "text", "text": text}]},
    st.sampled_from(["user", "assistant", "tool"]),
    st.text(max_size=30),
)
OPS = ["append", "edit", "kv_put", "kv_delete", "turn", "turn_end", "effect", "terminal",
       "extension", "lifecycle", "big"]  # fmt: skip


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[int]]:
    """Record field dicts (seq assigned later, in order) and batch sizes that cover them."""
    environments = draw(st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True))
    records: list[dict[str, Any]] = [created(environments)]
    length, open_turn, started = 0, None, []
    for op in draw(st.lists(st.sampled_from(OPS), max_size=40)):
        seq = len(records) + 1
        if op == "append":
            items = draw(st.lists(messages, min_size=1, max_size=3))
            records.append(
                {
                    "kind": "transcript_changed",
                    "start": length,
                    "items": items,
                    "length": length + len(items),
                }
            )
            length += len(items)
        elif op == "edit" and length:
            start = draw(st.integers(0, length - 1))
            items = draw(st.lists(messages, max_size=3))
            records.append(
                {
                    "kind": "transcript_changed",
                    "start": start,
                    "items": items,
                    "length": start + len(items),
                }
            )
            length = start + len(items)
        elif op == "kv_put":
            records.append(
                {"kind": "kv_put", "key": draw(st.sampled_from("abc")), "value": draw(json_values)}
            )
        elif op == "kv_delete":
            records.append({"kind": "kv_delete", "key": draw(st.sampled_from("abcd"))})
        elif op == "turn":
            records.append(
                {"kind": "turn_started", "input": draw(st.text(max_size=10)), "mode": "send"}
            )
            open_turn = seq
        elif op == "turn_end" and open_turn:
            kind = draw(st.sampled_from(["turn_ended", "turn_failed"]))
            records.append(
                {
                    "kind": kind,
                    "started": open_turn,
                    "output": None,
                    "error": {"code": "x", "message": "y"},
                }
            )
            open_turn = None
        elif op == "effect":
            kind = draw(
                st.sampled_from(
                    [
                        "activation_started",
                        "model_call_started",
                        "tool_call_started",
                        "environment_op_started",
                    ]
                )
            )
            record: dict[str, Any] = {"kind": kind}
            if kind == "environment_op_started":
                record.update(
                    environment=draw(st.sampled_from(["a", "b"])),
                    op=draw(st.sampled_from(["setup", "exec"])),
                    request={},
                )
            records.append(record)
            started.append((seq, kind))
        elif op == "terminal" and started:
            first, kind = started.pop(draw(st.integers(0, len(started) - 1)))
            ending = draw(st.sampled_from(["_ended", "_failed"]))
            records.append(
                {"kind": kind.replace("_started", ending), "started": first, "outcome": "ok"}
            )
        elif op == "extension":
            records.append(
                {
                    "kind": "extension_event",
                    "name": "progress",
                    "data": draw(json_values),
                    "origin": {"kind": "agentloop", "sequence": max(1, seq - 1)},
                }
            )
        elif op == "lifecycle":
            records.append(
                {
                    "kind": draw(
                        st.sampled_from(
                            [
                                "cancel_requested",
                                "session_ending",
                                "session_ended",
                                "session_failed",
                            ]
                        )
                    )
                }
            )
        elif op == "big":
            records.append(
                {"kind": "kv_put", "key": "big", "value": "v" * draw(st.integers(100, 3000))}
            )
    cuts = draw(st.lists(st.integers(1, 6), min_size=len(records), max_size=len(records)))
    return records, cuts


def write(
    journal_dir: Path,
    records: list[dict[str, Any]],
    cuts: list[int],
    segment_bytes: int,
    checkpoint_after: int | None = None,
) -> list[dict[str, Any]]:
    writer = JournalWriter.open(journal_dir, segment_bytes=segment_bytes, clock=Clock())
    committed: list[dict[str, Any]] = []
    projection = Projection.empty()
    i, batch_no = 0, 0
    while i < len(records):
        batch = records[i : i + cuts[batch_no]]
        done = writer.append(batch)
        assert [r["seq"] for r in done] == list(range(i + 1, i + len(batch) + 1))
        committed += done
        for record in done:
            projection = fold(projection, record)
        if checkpoint_after is not None and batch_no == checkpoint_after:
            writer.write_checkpoint(projection)
        i += len(batch)
        batch_no += 1
    writer.close()
    return committed


def expected_events(committed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events, length = [], 0
    for record in committed:
        event = to_event(record, length)
        if record["kind"] == "transcript_changed":
            length = record["length"]
        if event is not None:
            events.append(event)
    return events


def all_pages(reader: SessionReader, limit: int) -> list[dict[str, Any]]:
    events, after = [], 0
    for _ in range(10_000):
        page = reader.events_page(after, limit)
        events += page["events"]
        after = page["next_after"]
        if not page["has_more"]:
            return events
    raise AssertionError("paging did not finish")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sessions(),
    st.sampled_from([256, 700, 4096, 64 << 20]),
    st.integers(1, 7),
    st.none() | st.integers(0, 10),
)
def test_reopen_folds_to_the_in_memory_fold(
    session: Any, segment_bytes: int, limit: int, checkpoint_after: int | None
) -> None:
    records, cuts = session
    with tempfile.TemporaryDirectory() as tmp:
        session_dir = Path(tmp) / "s"
        committed = write(session_dir / "journal", records, cuts, segment_bytes, checkpoint_after)
        expected = fold_all(Projection.empty(), committed)
        one_by_one = Projection.empty()
        for record in committed:
            one_by_one = fold(one_by_one, record)
        assert one_by_one == expected

        reader = SessionReader(session_dir)
        assert reader.projection() == expected
        assert reader.status() == expected.status_view()
        assert reader.transcript() == {
            "messages": expected.transcript,
            "through_sequence": len(committed),
        }
        assert all_pages(reader, limit) == expected_events(committed)
        assert list(reader.events_after(0)) == expected_events(committed)

        writer = JournalWriter.open(session_dir / "journal", segment_bytes=segment_bytes)
        assert writer.last_seq == len(committed)  # recovery found nothing to repair
        writer.close()
        assert SessionReader(session_dir).projection() == expected
        no_cp = SessionReader(session_dir, checkpoint_path=Path(tmp) / "none")
        assert no_cp.projection() == expected
