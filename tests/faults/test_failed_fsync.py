"""A failed fdatasync is fatal for the session's writer, end to end through a real server.

The journal writer's test hook (brain/journal/fault_hook.py, armed by BRAIN_TEST_FAIL_FSYNC)
fails exactly one fdatasync of the session named in a trigger file. The PostgreSQL fsync
lesson: the batch is never reported committed, never retried and believed; nothing after it
is sent; the session is reopened from what is on disk, and takes the next turn.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.faults.checks import journal, kinds, unmatched_starts, verify
from tests.faults.support import post_turn, slow_tool_server
from tests.support.server import BrainServer
from tests.support.waiting import wait_for
from tests.tools.toolserver import ToolServer


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[BrainServer, ToolServer, Path]]:
    trigger = tmp_path / "fail-fsync"
    with slow_tool_server(tmp_path, tmp_path / "data", delay_ms=1500,
                          env={"BRAIN_TEST_FAIL_FSYNC": str(trigger)}) as (server, tool):
        yield server, tool, trigger


def status(server: BrainServer, sid: str) -> str:
    return server.request("GET", f"/v1/sessions/{sid}").json()["status"]


def assert_internal(resp: requests.Response) -> None:
    assert resp.status_code == 500, resp.text
    error = resp.json()["error"]
    assert error["code"] == "internal" and error["message"] and error["request_id"], error


def turn_whose_model_answer_fails_to_sync(server: BrainServer, trigger: Path,
                                          sid: str) -> requests.Response:
    """A sync tool-using turn whose model call's answer is the commit whose fdatasync fails;
    returns the client's response, which must come."""
    answer: dict[str, Any] = {}
    client = threading.Thread(target=lambda: answer.update(resp=post_turn(server, sid,
                                                                          "use the tool")))
    client.start()
    wait_for(lambda: "model_call_started" in kinds(journal(server.data_dir, sid)),
             what="the model call under way")
    trigger.write_text(sid)  # the model call's answer is the next commit: its fdatasync fails
    client.join(timeout=60)
    assert not client.is_alive(), "the client must be answered, not left waiting"
    return answer["resp"]


def test_failed_fsync_mid_turn_is_never_trusted_and_nothing_after_it_is_sent(env) -> None:  # type: ignore[no-untyped-def]
    server, tool, trigger = env
    sid = server.create_session(model="slowtool", tools=["remote"])["id"]
    assert_internal(turn_whose_model_answer_fails_to_sync(server, trigger, sid))
    assert not trigger.exists(), "exactly one fdatasync failed"
    assert tool.requests == [], "the tool call the unsynced answer asked for was sent"
    wait_for(lambda: status(server, sid) == "idle", what="the session reopened from disk")
    records = journal(server.data_dir, sid)
    assert "model_call_ended" not in kinds(records), "the batch whose fdatasync failed stayed"
    assert kinds(records)[-3:] == ["model_call_failed", "activation_failed", "turn_failed"]
    assert records[-3]["outcome"] == "unknown"
    assert records[-1]["error"]["code"] == "interrupted"
    assert unmatched_starts(records) == []
    assert kinds(records).count("model_call_started") == 1  # never resent

    # The next turn runs, on the journal as it is on disk.
    ok = post_turn(server, sid, "hello")
    assert ok.status_code == 200 and ok.json()["status"] == "ended", ok.text
    assert verify(server.data_dir, sid) == ""


def test_failed_fsync_of_a_turn_start_refuses_the_turn(env) -> None:  # type: ignore[no-untyped-def]
    server, tool, trigger = env
    sid = server.create_session(model="slowtool")["id"]
    before = journal(server.data_dir, sid)
    trigger.write_text(sid)
    assert_internal(post_turn(server, sid, "hello"))
    assert not trigger.exists()
    assert journal(server.data_dir, sid) == before, "a turn nobody was told of is in the journal"
    assert status(server, sid) == "idle"
    submitted = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "again"},
                               headers={"Prefer": "respond-async"})
    assert submitted.status_code == 202, submitted.text
    wait_for(lambda: "turn_ended" in kinds(journal(server.data_dir, sid)), what="the next turn")
    assert unmatched_starts(journal(server.data_dir, sid)) == []
    assert verify(server.data_dir, sid) == ""
    # The next turn has the refused one's sequence; nothing of the refused turn counted for it.
    messages = server.request("GET", f"/v1/sessions/{sid}/transcript").json()["messages"]
    said = [block["text"] for m in messages if m["role"] == "user" for block in m["content"]]
    assert said == ["again"], messages


def test_writer_cuts_a_batch_whose_fdatasync_failed(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Library level: the failed batch leaves the segment (page cache included), the writer
    refuses every later append, and a reopen sees the journal as it was before the batch."""
    from brain.journal import JournalScan, JournalWriter, WriterBroken
    from brain.journal import writer as writer_module
    from brain.journal.fault_hook import ENV, armed_fdatasync

    trigger = tmp_path / "trigger"
    monkeypatch.setenv(ENV, str(trigger))
    monkeypatch.setattr(writer_module, "_test_fdatasync", armed_fdatasync())
    journal_dir = tmp_path / "s1" / "journal"
    writer = JournalWriter.open(journal_dir)
    writer.append([{"kind": "kv_put", "key": "a", "value": 1}])
    scan = JournalScan(journal_dir)
    assert len(list(scan)) == 1  # the first batch, one frame
    [segment] = journal_dir.iterdir()
    before = segment.read_bytes()[:scan.end.offset]
    trigger.write_text("s1")
    with pytest.raises(WriterBroken):
        writer.append([{"kind": "kv_put", "key": "b", "value": 2}])
    # Cut at the batch's start, with the room the writer kept after its frames (writer.py).
    assert segment.read_bytes() == before
    with pytest.raises(WriterBroken):  # never retried, never believed
        writer.append([{"kind": "kv_put", "key": "c", "value": 3}])
    writer.close()
    reopened = JournalWriter.open(journal_dir)
    assert reopened.last_seq == 1
    reopened.close()
    assert [f.record["key"] for f in JournalScan(journal_dir)] == ["a"]


def test_a_pooled_actor_serves_the_next_session_after_an_abandoned_turn(tmp_path: Path) -> None:
    """An abandoned activation is refused by its number: the next session the same pooled
    actor serves has turns with the same sequences, and its guest calls must count."""
    trigger = tmp_path / "fail-fsync"
    env = {"BRAIN_TEST_FAIL_FSYNC": str(trigger), "BRAIN_SESSION_POOL_SIZE": "1"}
    with slow_tool_server(tmp_path, tmp_path / "data", delay_ms=1500, env=env) as (server, _):
        first = server.create_session(model="slowtool", tools=["remote"])["id"]
        assert_internal(turn_whose_model_answer_fails_to_sync(server, trigger, first))
        wait_for(lambda: status(server, first) == "idle", what="the session reopened from disk")
        again = post_turn(server, first, "hello")  # after it the actor is released to the pool
        assert again.status_code == 200 and again.json()["status"] == "ended", again.text

        second = server.create_session(model="slowtool")["id"]
        turn = post_turn(server, second, "hello")
        assert turn.status_code == 200 and turn.json()["status"] == "ended", turn.text
        started = [r["seq"] for r in journal(server.data_dir, second)
                   if r["kind"] == "turn_started"]
        failed = [r["started"] for r in journal(server.data_dir, first)
                  if r["kind"] == "turn_failed"]
        assert started == failed, "the two turns must share a sequence for this to test anything"
