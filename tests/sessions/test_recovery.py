"""The restart plan (docs/concepts.md, "Suspension and recovery"), folded from records."""

from __future__ import annotations

from brain.journal import empty_projection, fold_all
from brain.sessions.recovery import interrupted_work


def seq(records: list[dict]) -> list[dict]:
    return [{"seq": i + 1, "at": 0, **r} for i, r in enumerate(records)]


CREATED = {"kind": "session_created", "config": {"environments": [], "agentloop": {"name": "d"}},
           "seeded": 0}


def plan(records: list[dict]) -> list[dict]:
    return interrupted_work(fold_all(empty_projection(), seq(records)))


def test_a_quiet_session_needs_nothing() -> None:
    assert plan([CREATED]) == []


def test_interrupted_turn_fails_and_every_open_effect_becomes_unknown() -> None:
    records = plan([
        CREATED,
        {"kind": "turn_started", "input": "hi", "mode": "send"},
        {"kind": "activation_started", "agentloop": "d", "turn": 2},
        {"kind": "model_call_started", "model": "m", "message_count": 1,
         "context": {"through_sequence": 3, "delta": {"start": 0, "items": []}},
         "tools": [], "options": {}},
        {"kind": "tool_call_started", "tool": "t", "invocation": {"id": "a", "input": {}},
         "deadline": None},
        {"kind": "tool_call_started", "tool": "t", "invocation": {"id": "b", "input": {}},
         "deadline": None},
        {"kind": "tool_call_ended", "started": 5, "result": {"content": 1, "is_error": False},
         "outcome": "ok"},
    ])
    assert [(r["kind"], r.get("started"), r.get("outcome")) for r in records] == [
        ("model_call_failed", 4, "unknown"),
        ("tool_call_failed", 6, "unknown"),
        ("activation_failed", 3, None),
        ("turn_failed", 2, None),
    ]
    assert records[1]["result"]["is_error"] is True
    assert records[-1]["error"]["code"] == "interrupted"


def test_interrupted_creation_fails_the_session() -> None:
    created = {**CREATED, "config": {"environments": [{"name": "w", "kind": "local"}]}}
    records = plan([created, {"kind": "environment_op_started", "environment": "w",
                              "op": "setup", "request": {}}])
    assert [r["kind"] for r in records] == ["environment_op_failed", "session_failed"]


def test_interrupted_ending_is_closed() -> None:
    records = plan([CREATED, {"kind": "session_ending"},
                    {"kind": "environment_op_started", "environment": "w", "op": "detach",
                     "request": {}}])
    assert [r["kind"] for r in records] == ["environment_op_failed", "session_ended"]


def test_plan_is_complete_after_it_is_applied() -> None:
    base = [CREATED, {"kind": "turn_started", "input": "x", "mode": "submit"}]
    folded = fold_all(empty_projection(), seq(base))
    repaired = seq(base + plan(base))
    assert interrupted_work(fold_all(empty_projection(), repaired)) == []
    assert fold_all(empty_projection(), repaired).status == "idle"
    assert folded.status == "running"
