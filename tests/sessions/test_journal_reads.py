"""What the session core decides from journals read without an actor: the sessions a start
recovers and the webhooks it resumes (brain/journal/statuses.py reads, brain/sessions/scan.py
decides), and the Environments a delete tears down (brain/journal/scan.py `journal_records`,
brain/sessions/environments.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from brain.journal import JournalWriter
from brain.journal.scan import journal_records
from brain.journal.statuses import session_statuses
from brain.protocol.messages import DeliverWebhook
from brain.sessions import records
from brain.sessions.environments import set_up_in
from brain.sessions.scan import sessions_in_flight, start_up_scan

CONFIG = {"agentloop": {"name": "default"}, "model": {"name": "scripted"}, "tools": [],
          "environments": [], "idle_ttl_ms": None, "metadata": {}}


def journal(session_dir: Path, *batches: list[dict[str, Any]]) -> None:
    writer = JournalWriter.open(session_dir / "journal")
    try:
        for batch in batches:
            writer.append(batch)
    finally:
        writer.close()


def test_a_start_recovers_sessions_in_flight_and_resumes_pending_webhooks(
        tmp_path: Path) -> None:
    journal(tmp_path / "a-idle", [records.session_created(CONFIG, 0)])
    journal(tmp_path / "b-running", [records.session_created(CONFIG, 0)],
            [records.turn_started("hi", "send")])
    journal(tmp_path / "c-owed", [records.session_created(CONFIG, 0)],
            [records.webhook_delivery_pending("w-1", {"sequence": 2})])
    (tmp_path / "d-not-a-session").write_text("")
    statuses = list(session_statuses(tmp_path))
    assert [session_id for session_id, _, _ in statuses] == ["a-idle", "b-running", "c-owed"]
    scan = start_up_scan(statuses)
    assert scan.in_flight == ["b-running"]
    assert scan.webhooks == (DeliverWebhook("c-owed", "w-1", {"sequence": 2}, 0),)
    assert sessions_in_flight(statuses) == ["b-running"]


def test_a_damaged_session_is_neither_recovered_nor_delivered(tmp_path: Path) -> None:
    journal(tmp_path / "s", [records.session_created(CONFIG, 0)],
            [records.turn_started("hi", "send")])
    [(session_id, projection, _)] = session_statuses(tmp_path)
    assert projection.status == "running"
    assert start_up_scan([(session_id, projection, "refused")]).in_flight == []


def test_no_sessions_root_is_no_sessions(tmp_path: Path) -> None:
    assert list(session_statuses(tmp_path / "missing")) == []
    assert start_up_scan([]).in_flight == []


def op(seq: int, name: str, what: str) -> dict[str, Any]:
    return {"seq": seq, "kind": "environment_op_started", "environment": name, "op": what}


def ended(started: int) -> dict[str, Any]:
    return {"kind": "environment_op_ended", "started": started}


def test_only_environments_whose_setup_succeeded_and_stands_are_set_up() -> None:
    assert set_up_in([
        op(1, "a", "setup"), ended(1),
        op(2, "b", "setup"),  # never ended: its setup failed or is unknown
        op(3, "c", "setup"), ended(3), op(4, "c", "teardown"), ended(4),
    ]) == {"a"}


def test_the_records_read_from_a_journal_are_the_ones_committed(tmp_path: Path) -> None:
    started = records.environment_op_started("scratch", "setup", {})
    journal(tmp_path / "s", [records.session_created(CONFIG, 0)], [started])
    read = list(journal_records(tmp_path / "s" / "journal"))
    assert [record["kind"] for record in read] == ["session_created", "environment_op_started"]
    assert set_up_in(journal_records(tmp_path / "s" / "journal")) == set()
    journal(tmp_path / "s", [records.effect_ended("environment_op", 2, {})])
    assert set_up_in(journal_records(tmp_path / "s" / "journal")) == {"scratch"}
