"""Replaying a past turn against another Agentloop (docs/replay.md), on journals a real server
wrote: the unchanged loop agrees call for call, a changed one diverges at the call it changed
with both sides shown, and neither sends anything nor touches the session's files. Through
`brain replay` and `POST /v1/sessions/{id}/replays`."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from brain.journal import JournalScan
from brain.replayer.refusal import ReplayRefused
from brain.replayer.run import replay_turn
from brain.settings import Settings
from tests.agentloop.helpers import compile_guest
from tests.support.python_guests import python_guest, seed_compiled
from tests.support.server import BrainServer, configured
from tests.support.waiting import wait_for

REPLAY_TIMEOUT_SECS = 120
CONFIG = """
[models.tooler]
provider = "scripted"
script = [
  {{ when_last_user_matches = "tool", tool_calls = [ {echo_ping} ] }},
  {{ when_last_user_matches = "tool", text = "done" }},
  {{ text = "plain answer" }},
]

[models.slow_tooler]
provider = "scripted"
script = [
  {{ tool_calls = [ {{ name = "echo", input = {{ text = "slow" }} }} ], delay_ms = 300 }},
  {{ text = "slowly done", delay_ms = 300 }},
]

[models.sleepy]
provider = "scripted"
script = [ {{ text = "too late", delay_ms = 60000 }} ]

[agentloops.audited]
path = "{audited}"
"""
ECHO_PING = '{ name = "echo", input = { text = "ping" } }'
# What the default loop asks in a turn with one round of Tools, in order.
TOOL_TURN_OPS = ["transcript.read", "transcript.set", "model.call", "transcript.set",
                 "tools.call", "transcript.set", "model.call", "transcript.set", "return"]


@dataclass(frozen=True)
class Served:
    server: BrainServer
    trace: Path
    session_id: str
    tool_turn: int  # the first turn: the model asks for the echo Tool once
    plain_turn: int  # the second (and last) turn: the model answers at once
    audited: Path  # the default policy, changed to kv.put the Tools asked for before running them


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp_path = tmp_path_factory.mktemp("replay")
    audited = python_guest("audited_tools")
    server = configured(tmp_path, CONFIG.format(audited=audited, echo_ping=ECHO_PING),
                        {"BRAIN_TRACE": str(tmp_path / "trace.jsonl")})
    server.data_dir.mkdir(parents=True)
    seed_compiled(server.data_dir, audited)
    server.start()
    try:
        session_id = server.create_session(model="tooler", tools=["echo"])["id"]
        first = server.send(session_id, "use the tool")
        second = server.send(session_id, "just talk")
        assert (first["output"], second["output"]) == ("done", "plain answer")
        yield Served(server, tmp_path / "trace.jsonl", session_id, first["sequence"],
                     second["sequence"], audited)
    finally:
        server.kill()


def brain_replay(served: Served, *args: str,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "brain.cli", "replay", *args,
                           "--data-dir", str(served.server.data_dir)],
                          capture_output=True, text=True, timeout=REPLAY_TIMEOUT_SECS,
                          env={**os.environ, **(env or {})})


def files_of(directory: Path) -> dict[str, str]:
    """Every file under `directory` by its path, with the sha256 of its bytes."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_the_unchanged_loop_agrees_with_every_call_and_writes_nothing(served: Served) -> None:
    session_dir = served.server.data_dir / "sessions" / served.session_id
    before = files_of(session_dir)
    done = brain_replay(served, served.session_id, "--turn", str(served.tool_turn), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "match" and report["divergence"] is None
    assert report["same_module"] is True
    assert [s["op"] for s in report["steps"]] == TOOL_TURN_OPS
    assert [s["status"] for s in report["steps"]][:2] == ["answered", "match"]
    assert all(s["status"] == "match" for s in report["steps"][1:])
    assert report["matched_records"] == report["journaled_records"] == 10
    assert report["returned"] == report["journaled_result"] == {"status": "completed",
                                                                 "output": "done"}
    tools_step = report["steps"][4]
    assert tools_step["answer"]["results"][0]["content"] == {"text": "ping"}
    assert files_of(session_dir) == before  # byte for byte: nothing written, nothing added


def test_the_report_in_process(served: Served) -> None:
    """`replay_turn` itself, as the command calls it: a report whose JSON form is the
    command's, and a refusal for a turn that is not there."""
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(served.server.data_dir)})
    report = replay_turn(settings, served.session_id, served.tool_turn, served.audited)
    assert report.verdict == "diverged"
    assert report.divergence is not None and report.divergence.call == 5
    assert json.loads(json.dumps(report.as_json()))["divergence"]["op"] == "kv.put"
    assert len(report.lines()) == 1 + 5 + 3 + 1  # title, steps, both sides, verdict
    with pytest.raises(ReplayRefused) as refused:
        replay_turn(settings, served.session_id, served.tool_turn + 1)
    assert refused.value.code == "invalid_request"
    with pytest.raises(ReplayRefused) as refused:
        replay_turn(settings, "../sessions")
    assert refused.value.code == "not_found"


def test_the_default_turn_is_the_last_finished_one_and_the_text_is_one_line_a_step(
        served: Served) -> None:
    done = brain_replay(served, served.session_id)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"turn {served.plain_turn} of session {served.session_id}")
    steps = lines[1:-1]
    assert [line.split()[1] for line in steps] == [
        "transcript.read", "transcript.set", "model.call", "transcript.set", "return"]
    assert lines[-1].startswith("no divergence: 4 guest calls and the return agree")


def test_a_changed_loop_diverges_at_the_call_it_changed(served: Served) -> None:
    session_dir = served.server.data_dir / "sessions" / served.session_id
    before = files_of(session_dir)
    done = brain_replay(served, served.session_id, "--turn", str(served.tool_turn),
                        "--agentloop", str(served.audited), "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "diverged" and report["same_module"] is False
    assert [s["status"] for s in report["steps"]] == ["answered", "match", "match", "match",
                                                      "diverged"]
    divergence = report["divergence"]
    assert (divergence["call"], divergence["op"]) == (5, "kv.put")
    journaled, asked = divergence["journaled"], divergence["asked"]
    assert (journaled["kind"], journaled["tool"]) == ("tool_call_started", "echo")
    assert (asked["kind"], asked["key"], asked["value"]) == ("kv_put", "asked_tools", ["echo"])
    assert journaled["seq"] == asked["seq"]
    assert "guest call #5 (kv.put)" in divergence["message"]
    assert report["returned"] is None  # stopped at the divergence
    assert report["matched_records"] == 4
    assert files_of(session_dir) == before

    text = brain_replay(served, served.session_id, "--turn", str(served.tool_turn),
                        "--agentloop", str(served.audited))
    assert text.returncode == 1
    assert "journal: " in text.stdout and "asked:   " in text.stdout
    assert text.stdout.splitlines()[-1].startswith("diverged at guest call #5 (kv.put)")


def test_the_changed_loop_agrees_where_the_policy_did_not_change(served: Served) -> None:
    """In the turn without Tools the audited loop does what the default did."""
    done = brain_replay(served, served.session_id, "--agentloop", str(served.audited), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["turn"] == served.plain_turn


def test_a_python_build_of_the_default_policy_agrees_with_the_c_one(served: Served) -> None:
    component = python_guest("default_loop")
    seed_compiled(served.server.data_dir, component)
    done = brain_replay(served, served.session_id, "--turn", str(served.tool_turn),
                        "--agentloop", str(component), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [s["op"] for s in json.loads(done.stdout)["steps"]] == TOOL_TURN_OPS


def test_a_turn_suspended_at_each_wait_replays_as_one_activation(served: Served) -> None:
    """Its model outlasts the suspension grace: the live activation was dropped while it
    waited and resumed by replay; the offline replay runs it once, from its start."""
    server = served.server
    session_id = server.create_session(model="slow_tooler", tools=["echo"])["id"]
    assert server.send(session_id, "take your time")["output"] == "slowly done"
    trace = served.trace.read_text()
    assert "resumed: a fresh instance replays" in trace
    done = brain_replay(served, session_id, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert [s["op"] for s in report["steps"]] == TOOL_TURN_OPS
    assert report["returned"] == {"status": "completed", "output": "slowly done"}


def test_a_cancelled_turn_replays_to_where_it_was_stopped(served: Served) -> None:
    """Its end is the cancel's, not what the loop returned: the replay compares the calls the
    loop made before the stop, and the report shows the turn's result."""
    server = served.server
    session_id = server.create_session(model="sleepy")["id"]
    journal = server.data_dir / "sessions" / session_id / "journal"
    resp = server.request("POST", f"/v1/sessions/{session_id}/messages", json={"input": "hi"},
                          headers={"Prefer": "respond-async"})
    assert resp.status_code == 202, resp.text
    wait_for(lambda: "model_call_started" in {f.record["kind"] for f in JournalScan(journal)},
             timeout=30, what="the model call")
    assert server.request("POST", f"/v1/sessions/{session_id}/cancel").status_code == 202
    wait_for(lambda: server.request("GET", f"/v1/sessions/{session_id}").json()["status"]
             == "idle", timeout=30, what="the cancelled turn's end")
    done = brain_replay(served, session_id, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert [s["op"] for s in report["steps"]][:3] == ["transcript.read", "transcript.set",
                                                      "model.call"]
    assert report["steps"][-1]["op"] == "return"
    assert report["journaled_result"]["error"]["code"] == "cancelled"
    assert report["matched_records"] == report["journaled_records"]


def test_a_loop_that_does_not_stop_is_cut_off_at_the_turn_deadline(served: Served,
                                                                   tmp_path: Path) -> None:
    spin = compile_guest("spin", tmp_path)
    began = time.monotonic()
    done = brain_replay(served, served.session_id, "--agentloop", str(spin), "--json",
                        env={"BRAIN_MAX_TURN_SECS": "2"})
    assert time.monotonic() - began < 30
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["steps"] == [report["divergence"]]  # it never made a call
    assert report["returned"]["error"]["code"] == "turn_timeout"
    assert report["divergence"]["op"] == "return"


def test_refusals_say_why_and_exit_2(served: Served, tmp_path: Path) -> None:
    unknown = brain_replay(served, "no-such-session")
    assert unknown.returncode == 2 and "no session no-such-session" in unknown.stderr
    as_json = brain_replay(served, "no-such-session", "--json")
    assert json.loads(as_json.stdout)["error"]["code"] == "not_found"

    out_of_range = brain_replay(served, served.session_id, "--turn", "999")
    assert out_of_range.returncode == 2
    assert "no turn that started at sequence 999" in out_of_range.stderr
    assert f"{served.tool_turn}, {served.plain_turn}" in out_of_range.stderr

    not_wasm = tmp_path / "not.wasm"
    not_wasm.write_bytes(b"not a module")
    bad = brain_replay(served, served.session_id, "--agentloop", str(not_wasm))
    assert bad.returncode == 2 and f"Agentloop {not_wasm} cannot be run" in bad.stderr


def test_a_damaged_session_is_refused(served: Served) -> None:
    sessions = served.server.data_dir / "sessions"
    copy = sessions / "damagedcopy"
    shutil.copytree(sessions / served.session_id, copy)
    segment = sorted((copy / "journal").glob("*.seg"))[0]
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    try:
        done = brain_replay(served, "damagedcopy")
        assert done.returncode == 2
        assert "session damagedcopy is damaged" in done.stderr
        resp = served.server.request("POST", "/v1/sessions/damagedcopy/replays", json={})
        assert resp.status_code == 500 and resp.json()["error"]["code"] == "session_damaged"
    finally:
        shutil.rmtree(copy)


def test_the_http_route_replays_with_configured_agentloops_only(served: Served) -> None:
    server, sid = served.server, served.session_id
    session_dir = server.data_dir / "sessions" / sid
    before = files_of(session_dir)
    same = server.request("POST", f"/v1/sessions/{sid}/replays",
                          json={"turn": served.tool_turn}, timeout=REPLAY_TIMEOUT_SECS)
    assert same.status_code == 200, same.text
    assert same.json()["verdict"] == "match"
    assert [s["op"] for s in same.json()["steps"]] == TOOL_TURN_OPS

    changed = server.request("POST", f"/v1/sessions/{sid}/replays",
                             json={"turn": served.tool_turn, "agentloop": "audited"},
                             timeout=REPLAY_TIMEOUT_SECS)
    assert changed.status_code == 200, changed.text
    assert changed.json()["divergence"]["op"] == "kv.put"

    last = server.request("POST", f"/v1/sessions/{sid}/replays", timeout=REPLAY_TIMEOUT_SECS)
    assert last.status_code == 200 and last.json()["turn"] == served.plain_turn
    assert files_of(session_dir) == before

    token = server.request("POST", f"/v1/sessions/{sid}/tokens").json()["token"]
    scoped = server.request("POST", f"/v1/sessions/{sid}/replays", json={}, token=token,
                            timeout=REPLAY_TIMEOUT_SECS)
    assert scoped.status_code == 200, scoped.text


@pytest.mark.parametrize(("path", "body", "status", "code"), [
    ("/v1/sessions/{sid}/replays", {"agentloop": str(Path("/etc/passwd"))}, 400,
     "invalid_request"),
    ("/v1/sessions/{sid}/replays", {"agentloop": "nonesuch"}, 400, "invalid_request"),
    ("/v1/sessions/{sid}/replays", {"turn": 999}, 400, "invalid_request"),
    ("/v1/sessions/{sid}/replays", {"turn": "2"}, 400, "invalid_request"),
    ("/v1/sessions/{sid}/replays", {"turns": 2}, 400, "invalid_request"),
    ("/v1/sessions/nosuchsession/replays", {}, 404, "not_found"),
])
def test_the_http_route_refuses_in_the_error_shape(served: Served, path: str, body: dict,
                                                   status: int, code: str) -> None:
    resp = served.server.request("POST", path.format(sid=served.session_id), json=body,
                                 timeout=REPLAY_TIMEOUT_SECS)
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert error["code"] == code and error["message"] and "request_id" in error


def test_the_http_route_needs_a_token(served: Served) -> None:
    resp = served.server.request("POST", f"/v1/sessions/{served.session_id}/replays",
                                 json={}, token=None)
    assert resp.status_code == 401


def test_replays_a_worker_runs_at_once_are_bounded(tmp_path: Path) -> None:
    """One web worker, a loop that never stops and a 3 s turn deadline: two replays run (and
    are cut off), a third at the same time is refused `overloaded` with Retry-After."""
    spin = compile_guest("spin", tmp_path / "guests")
    server = configured(tmp_path, f'[agentloops.spin]\npath = "{spin}"\n',
                        {"BRAIN_WEB_WORKERS": "1", "BRAIN_MAX_TURN_SECS": "3"}).start()
    try:
        session_id = server.create_session()["id"]
        assert server.send(session_id, "hi")["status"] == "ended"

        def replay(_: int) -> Any:
            return server.request("POST", f"/v1/sessions/{session_id}/replays",
                                  json={"agentloop": "spin"}, timeout=REPLAY_TIMEOUT_SECS)

        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(replay, range(3)))
        statuses = sorted(resp.status_code for resp in answers)
        assert statuses == [200, 200, 503], [resp.text for resp in answers]
        for resp in answers:
            if resp.status_code == 200:
                assert resp.json()["returned"]["error"]["code"] == "turn_timeout"
            else:
                assert resp.json()["error"]["code"] == "overloaded"
                assert resp.headers["Retry-After"] == "5"
    finally:
        server.kill()
