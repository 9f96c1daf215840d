"""The invariants the crash torture checks after every restart, each returning violations.

They read the journals (the canonical state) and compare them with what the clients and the
http Tool server saw. An empty list is the only passing answer.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Any

from brain.journal.cli import verify as verify_journal
from tests.faults.checks import unmatched_starts
from tests.faults.workload import Answer

TURN_TERMINALS = ("turn_ended", "turn_failed")


def journal_damage(session_dir: Path) -> list[str]:
    out = io.StringIO()
    code = verify_journal(str(session_dir), out=out)
    return [] if code == 0 else [f"{session_dir.name}: verify failed: {out.getvalue()}"]


def open_work(records: list[dict[str, Any]]) -> list[str]:
    return [f"{r}" for r in unmatched_starts(records, settled=True)]


def reruns(records: list[dict[str, Any]]) -> list[str]:
    """A turn's input started twice, or a turn with more than one activation."""
    problems = []
    inputs = Counter(r["input"] for r in records if r["kind"] == "turn_started")
    problems += [f"input {text!r} started {n} turns" for text, n in inputs.items() if n > 1]
    activations = Counter(r["turn"] for r in records if r["kind"] == "activation_started")
    problems += [f"turn {turn} activated {n} times" for turn, n in activations.items() if n > 1]
    return problems


def unbacked_answers(answers: list[Answer], records: list[dict[str, Any]]) -> list[str]:
    """An answer a client received whose records are not in the journal."""
    by_seq = {r["seq"]: r for r in records}
    ends = {r["started"]: r for r in records if r["kind"] in TURN_TERMINALS}
    problems = []
    for answer in answers:
        if answer.status not in (200, 202):
            continue
        body = answer.json()
        started = by_seq.get(body["sequence"])
        if started is None or started["kind"] != "turn_started" \
                or started["input"] != answer.input:
            problems.append(f"{answer.input}: answered {answer.status} for sequence "
                            f"{body['sequence']}, which the journal does not hold as its turn")
            continue
        if answer.status == 200:
            end = ends.get(body["sequence"])
            wanted = "turn_ended" if body["status"] == "ended" else "turn_failed"
            if end is None or end["kind"] != wanted:
                problems.append(f"{answer.input}: answered {body['status']}, journal has {end}")
    return problems


def repeated_tool_calls(tool_requests: list[Any], journals: dict[str, list[dict]]) -> list[str]:
    """An invocation the Tool server got twice, or one no durable tool_call_started fenced."""
    seen = Counter((r.body["session_id"], r.body["sequence"]) for r in tool_requests)
    problems = [f"tool invocation {key} reached the Tool server {n} times"
                for key, n in seen.items() if n > 1]
    for (sid, seq), _ in seen.items():
        record = next((r for r in journals.get(sid, []) if r["seq"] == seq), None)
        if record is None or record["kind"] != "tool_call_started":
            problems.append(f"tool invocation {sid}/{seq} has no tool_call_started")
    return problems


def replay_mismatch(first: Answer, retry_status: int, retry_body: bytes) -> list[str]:
    """A keyed retry must replay the answer the client got, byte for byte; with no answer
    received, any answer is fine except a second run (checked by `reruns`)."""
    if first.status not in (200, 201, 202):
        return []  # refused (a busy session's claim is released) or lost: nothing to replay
    if (retry_status, retry_body) != (first.status, first.body):
        return [f"{first.key}: first {first.status} {first.body!r}, "
                f"retry {retry_status} {retry_body!r}"]
    return []


def follower_mismatch(session_id: str, seen: list[int], committed: list[int]) -> list[str]:
    """Each committed Event exactly once, in order, across reconnects."""
    problems = []
    dupes = [seq for seq, n in Counter(seen).items() if n > 1]
    if dupes:
        problems.append(f"{session_id}: follower saw Events {dupes[:10]} more than once")
    if seen != sorted(seen):
        problems.append(f"{session_id}: follower saw Events out of order")
    missing = sorted(set(committed) - set(seen))
    extra = sorted(set(seen) - set(committed))
    if missing:
        problems.append(f"{session_id}: follower missed Events {missing[:10]}")
    if extra:
        problems.append(f"{session_id}: follower saw uncommitted Events {extra[:10]}")
    return problems
