"""A turn that waits on its model or its Tools holds no session actor: a real server with one
session actor serves many waiting turns at once, each suspended while it waits and resumed by
replay in a fresh instance when its outcome comes, with every effect sent once. A cancel and
the turn deadline reach a suspended turn; `brain trace` shows the suspension and the
resumption and its commit-before-send check passes."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from brain.journal import JournalScan
from tests.support.server import BrainServer, configured, session_processes
from tests.support.waiting import wait_for

MODEL_SECS = 2.0
CONFIG = f"""
[models.slow]
provider = "scripted"
script = [ {{ text = "answered", delay_ms = {int(MODEL_SECS * 1000)} }} ]

[models.napper]
provider = "scripted"
script = [
  {{ tool_calls = [ {{ name = "nap", input = {{ seconds = 1 }} }},
                    {{ name = "nap", input = {{ seconds = 1 }} }} ], delay_ms = 300 }},
  {{ text = "rested", delay_ms = 300 }},
]

[tools.nap]
route = "builtin"
function = "sleep"
description = "Sleep for `seconds`."
"""
ONE_ACTOR = {"BRAIN_SESSION_POOL_SIZE": "1", "BRAIN_MAX_SESSION_ACTORS": "1"}


def records(server: BrainServer, session_id: str) -> list[dict]:
    journal = server.data_dir / "sessions" / session_id / "journal"
    return [frame.record for frame in JournalScan(journal)]


def kinds(server: BrainServer, session_id: str) -> list[str]:
    return [record["kind"] for record in records(server, session_id)]


def submit(server: BrainServer, session_id: str) -> int:
    resp = server.request("POST", f"/v1/sessions/{session_id}/messages", json={"input": "hi"},
                          headers={"Prefer": "respond-async"}, timeout=30)
    assert resp.status_code == 202, resp.text
    return resp.json()["sequence"]


def status(server: BrainServer, session_id: str) -> str:
    return server.request("GET", f"/v1/sessions/{session_id}").json()["status"]


def assert_sent_once_and_answered(server: BrainServer, session_id: str) -> None:
    """Every effect of the session was started once and has exactly one terminal record."""
    journal = records(server, session_id)
    started = [r["seq"] for r in journal if r["kind"] in ("model_call_started",
                                                           "tool_call_started")]
    ends = [r["started"] for r in journal if r["kind"] in (
        "model_call_ended", "model_call_failed", "tool_call_ended", "tool_call_failed")]
    assert sorted(ends) == sorted(started), journal


def test_many_waiting_turns_share_one_session_actor(tmp_path: Path) -> None:
    """Eight sync sends wait 2 s on their model at once on a server with one session actor:
    all end in about one model call's time (in turn they would take 16 s), none refused."""
    trace = tmp_path / "trace.jsonl"
    server = configured(tmp_path, CONFIG, {**ONE_ACTOR, "BRAIN_TRACE": str(trace)}).start()
    try:
        ids = [server.create_session(model="slow")["id"] for _ in range(8)]
        began = time.monotonic()
        with ThreadPoolExecutor(len(ids)) as pool:
            answers = list(pool.map(lambda s: server.request(
                "POST", f"/v1/sessions/{s}/messages", json={"input": "hi"}, timeout=60), ids))
        elapsed = time.monotonic() - began
        for resp in answers:
            assert resp.status_code == 200, resp.text
            assert resp.json()["status"] == "ended" and resp.json()["output"] == "answered"
        assert elapsed < 3 * MODEL_SECS, f"the turns waited in turn: {elapsed:.1f} s"
        assert session_processes(server) <= 1
        for session_id in ids:
            assert kinds(server, session_id).count("model_call_started") == 1
            assert_sent_once_and_answered(server, session_id)
            # One activation: a resumed one goes on in the same activation record.
            assert kinds(server, session_id).count("activation_started") == 1
        server.stop()
        checked = subprocess.run([sys.executable, "-m", "brain.cli", "trace", "--check",
                                  str(trace)], capture_output=True, text=True, timeout=120)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        text = trace.read_text()
        assert "suspended (its instance dropped)" in text
        assert "resumed: a fresh instance replays" in text
    finally:
        server.kill()


def test_a_tool_turn_suspends_at_each_wait_and_sends_each_effect_once(tmp_path: Path) -> None:
    server = configured(tmp_path, CONFIG, ONE_ACTOR).start()
    try:
        ids = [server.create_session(model="napper", tools=["nap"])["id"] for _ in range(4)]
        with ThreadPoolExecutor(len(ids)) as pool:
            answers = list(pool.map(lambda s: server.request(
                "POST", f"/v1/sessions/{s}/messages", json={"input": "hi"}, timeout=60), ids))
        for resp in answers:
            assert resp.status_code == 200, resp.text
            assert resp.json().get("output") == "rested", resp.text
        for session_id in ids:
            journal = kinds(server, session_id)
            assert journal.count("model_call_started") == 2
            assert journal.count("tool_call_started") == 2
            assert journal.count("tool_call_ended") == 2
            assert_sent_once_and_answered(server, session_id)
            assert journal[-2:] == ["activation_ended", "turn_ended"]
    finally:
        server.kill()


def test_a_suspended_turn_is_cancelled(tmp_path: Path) -> None:
    server = configured(tmp_path, CONFIG.replace("delay_ms = 2000", "delay_ms = 30000"),
                        ONE_ACTOR).start()
    try:
        session_id = server.create_session(model="slow")["id"]
        submit(server, session_id)
        wait_for(lambda: "model_call_started" in kinds(server, session_id), timeout=30,
                 what="the model call")
        wait_for(lambda: re.search(r"^brain_turns_suspended 1(\.0)?$",
                                   server.request("GET", "/metrics").text, re.MULTILINE),
                 timeout=10, what="the turn is counted suspended")
        # The only actor is free: another session runs a turn meanwhile.
        other = server.create_session()["id"]
        assert server.send(other, "meanwhile")["status"] == "ended"
        resp = server.request("POST", f"/v1/sessions/{session_id}/cancel")
        assert resp.status_code == 202, resp.text
        wait_for(lambda: status(server, session_id) == "idle", timeout=30,
                 what="the cancelled turn ended")
        journal = records(server, session_id)
        assert journal[-1]["kind"] == "turn_failed"
        assert journal[-1]["error"]["code"] == "cancelled"
        failed = next(r for r in journal if r["kind"] == "model_call_failed")
        assert failed["outcome"] == "cancelled"
        assert_sent_once_and_answered(server, session_id)
    finally:
        server.kill()


def test_a_suspended_turn_past_its_deadline_fails_turn_timeout(tmp_path: Path) -> None:
    server = configured(tmp_path, CONFIG.replace("delay_ms = 2000", "delay_ms = 30000"),
                        {**ONE_ACTOR, "BRAIN_MAX_TURN_SECS": "2"}).start()
    try:
        session_id = server.create_session(model="slow")["id"]
        submit(server, session_id)
        began = time.monotonic()
        wait_for(lambda: status(server, session_id) == "idle", timeout=30,
                 what="the turn timed out")
        assert time.monotonic() - began < 10
        journal = records(server, session_id)
        assert journal[-1]["kind"] == "turn_failed"
        assert journal[-1]["error"]["code"] == "turn_timeout"
        assert_sent_once_and_answered(server, session_id)
    finally:
        server.kill()


def test_a_sigkill_while_turns_are_suspended_fails_each_on_restart(tmp_path: Path) -> None:
    sigkill_while_suspended(tmp_path, 6, ONE_ACTOR)


@pytest.mark.torture
def test_a_sigkill_while_500_turns_wait_fails_each_on_restart(tmp_path: Path) -> None:
    """The full size: 500 turns wait on their model, on the default actor limits."""
    sigkill_while_suspended(tmp_path, 500, {})


def sigkill_while_suspended(tmp_path: Path, sessions: int, env: dict[str, str]) -> None:
    """`sessions` turns wait on a 30 s model, all suspended; SIGKILL of every Brain process;
    after the restart each turn failed `interrupted`, its model call `unknown`, none re-sent."""
    config = CONFIG.replace("delay_ms = 2000", "delay_ms = 30000")
    server = configured(tmp_path, config, env).start()
    try:
        ids = [server.create_session(model="slow")["id"] for _ in range(sessions)]
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda s: submit(server, s), ids))
        for session_id in ids:
            wait_for(lambda s=session_id: "model_call_started" in kinds(server, s), timeout=60,
                     what="every model call out")
        time.sleep(0.5)
        assert session_processes(server) <= int(env.get("BRAIN_MAX_SESSION_ACTORS", "64"))
        server.kill()
        server = configured(tmp_path, config, env)
        server.start()
        for session_id in ids:
            wait_for(lambda s=session_id: status(server, s) == "idle", timeout=120,
                     what="recovery")
            journal = records(server, session_id)
            assert [r["kind"] for r in journal[-3:]] == [
                "model_call_failed", "activation_failed", "turn_failed"]
            assert journal[-3]["outcome"] == "unknown"
            assert journal[-1]["error"]["code"] == "interrupted"
            assert kinds(server, session_id).count("model_call_started") == 1
    finally:
        server.kill()
