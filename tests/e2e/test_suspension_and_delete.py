"""Suspension, idle retention, delete with teardown, and SIGKILL during a Tool call."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from brain.journal import JournalScan
from tests.support.server import BrainServer, session_processes
from tests.support.waiting import wait_for
from tests.tools.toolserver import ToolServer


def test_session_actors_are_released_unless_retained(brain_server: BrainServer) -> None:
    s = brain_server
    warm = s.create_session()["id"]
    s.send(warm, "start the executors")
    time.sleep(0.5)  # let the warm-up session's release settle
    baseline = session_processes(s)
    released = s.create_session()["id"]
    s.send(released, "turn")
    wait_for(lambda: session_processes(s) == baseline, timeout=10, what="release after the turn")
    # Reads never wake an actor.
    s.request("GET", f"/v1/sessions/{released}/transcript")
    s.events(released)
    s.request("GET", f"/v1/sessions/{released}")
    time.sleep(0.5)
    assert session_processes(s) == baseline
    kept = s.create_session(idle_ttl_ms=0)["id"]
    s.send(kept, "turn")
    time.sleep(1.0)
    assert session_processes(s) == baseline + 1  # explicit zero retains it indefinitely
    briefly = s.create_session(idle_ttl_ms=1500)["id"]
    s.send(briefly, "turn")
    time.sleep(0.3)
    assert session_processes(s) == baseline + 2
    wait_for(lambda: session_processes(s) == baseline + 1, timeout=10, what="TTL release")
    # A released session re-opens from checkpoint + journal for the next message.
    assert s.send(released, "again")["status"] == "ended"


def test_delete_with_failing_teardown_then_retry(brain_server: BrainServer) -> None:
    s = brain_server
    sid = s.create_session(environments=["local"])["id"]
    root = s.data_dir / "environments" / sid / "local"
    assert root.is_dir()
    kinds = [e["kind"] for e in s.events(sid)]
    assert kinds[:3] == ["session_created", "environment_op_started", "environment_op_ended"]
    assert s.request("POST", f"/v1/sessions/{sid}/end").json()["status"] == "ended"
    stuck = root / "stuck"
    stuck.write_text("immutable")
    subprocess.run(["chattr", "+i", str(stuck)], check=True, timeout=10)
    try:
        first = s.request("DELETE", f"/v1/sessions/{sid}", headers={"Idempotency-Key": "d1"})
        assert (first.status_code, first.json()["error"]["code"]) == (502, "teardown_failed")
        assert s.request("GET", f"/v1/sessions/{sid}").status_code == 200  # still there
        failed = [e for e in s.events(sid) if e["kind"] == "environment_op_failed"]
        assert len(failed) == 1 and failed[0]["data"]["outcome"] == "error"
        replay = s.request("DELETE", f"/v1/sessions/{sid}", headers={"Idempotency-Key": "d1"})
        assert replay.content == first.content  # the same key never tries again
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=True, timeout=10)
    second = s.request("DELETE", f"/v1/sessions/{sid}", headers={"Idempotency-Key": "d2"})
    assert second.status_code == 204
    assert not (s.data_dir / "sessions" / sid).exists() and not root.exists()


def test_sigkill_during_tool_call_never_resends(tmp_path: Path) -> None:
    arrived = threading.Event()

    def hold(conn, req) -> None:  # type: ignore[no-untyped-def]
        arrived.set()
        conn.sleep(30)

    with ToolServer(hold) as tool:
        config = tmp_path / "brain.toml"
        config.write_text(
            '[models.caller]\nprovider = "scripted"\n'
            'script = [ { tool_calls = [ { name = "slowtool", input = { n = 1 } } ] },'
            ' { text = "done" } ]\n'
            f'[tools.slowtool]\nroute = "http"\nurl = "{tool.url}"\n')
        env = {"BRAIN_CONFIG": str(config)}
        server = BrainServer(tmp_path / "data", env=env).start()
        try:
            sid = server.create_session(model="caller", tools=["slowtool"])["id"]
            server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "go"},
                           headers={"Prefer": "respond-async"})
            assert arrived.wait(30), "the tool was never called"
            server.kill()
            server = BrainServer(tmp_path / "data", env=env).start()
            wait_for(lambda: server.request("GET", f"/v1/sessions/{sid}").json()["status"]
                     == "idle", what="recovery")
            time.sleep(1.0)
            assert len(tool.requests) == 1  # exactly one invocation, ever
            records = [f.record for f in JournalScan(server.data_dir / "sessions" / sid
                                                     / "journal")]
            [started] = [r for r in records if r["kind"] == "tool_call_started"]
            [failed] = [r for r in records if r["kind"] == "tool_call_failed"]
            assert (failed["started"], failed["outcome"]) == (started["seq"], "unknown")
            assert failed["result"]["is_error"] is True
            assert records[-1]["kind"] == "turn_failed"
            assert records[-1]["error"]["code"] == "interrupted"
        finally:
            server.kill()


def test_a_message_right_after_release_waits_for_the_old_actor(brain_server: BrainServer) -> None:
    """Create releases its actor; an immediate message must not race it for the journal."""
    s = brain_server
    for _ in range(25):
        sid = s.create_session()["id"]
        assert s.send(sid, "straight away")["status"] == "ended"
        assert s.send(sid, "and again")["status"] == "ended"
