"""BRAIN_TRACE through a real server: a tool-using turn and a cancelled turn, then the check."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import BrainServer, configured
from tests.support.waiting import wait_for
from tests.tracing.models import TOOLUSER
from tools.bench.message_count import count

CONFIG = TOOLUSER + """
[models.slow]
provider = "scripted"
script = [ { text = "too late", delay_ms = 20000 } ]
"""


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[BrainServer, Path]]:
    trace = tmp_path / "trace.jsonl"
    server = configured(tmp_path, CONFIG, {"BRAIN_TRACE": str(trace)}).start()
    try:
        yield server, trace
    finally:
        server.kill()


def brain_trace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "brain.cli", "trace", *args],
                          capture_output=True, text=True, timeout=60)


def trace_lines(trace: Path) -> list[dict]:
    return [json.loads(line) for line in trace.read_text().splitlines()]


def test_a_tool_turn_and_a_cancelled_turn_pass_the_check(traced, tmp_path: Path) -> None:
    server, trace = traced
    sid = server.create_session(model="tooluser", tools=["echo"])["id"]
    sent = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "use it"})
    assert sent.json()["status"] == "ended"
    request_id = sent.headers["x-request-id"]

    slow = server.create_session(model="slow")["id"]
    receipt = server.request("POST", f"/v1/sessions/{slow}/messages", json={"input": "wait"},
                             headers={"Prefer": "respond-async"})
    assert receipt.status_code == 202
    wait_for(lambda: any(e["kind"] == "model_call_started" for e in server.events(slow)),
             what="the slow model call")
    assert server.request("POST", f"/v1/sessions/{slow}/cancel").status_code == 202
    wait_for(lambda: server.request("GET", f"/v1/sessions/{slow}").json()["status"] == "idle",
             timeout=15, what="idle after cancel")
    time.sleep(0.3)  # lines reach the file within 100 ms of being written, without any exit

    lines = trace_lines(trace)
    # The id the client saw finds the whole way of its request, gateway to session and back.
    ours = [line for line in lines if line.get("request_id") == request_id]
    assert {(line["kind"], line["dir"], line["msg"]) for line in ours} >= {
        ("gateway", "send", "ToSession"), ("registry", "recv", "ToSession"),
        ("registry", "send", "Delivered"), ("session", "recv", "Delivered"),
        ("session", "send", "Reply"), ("gateway", "recv", "Reply")}
    run_tool = next(line for line in lines if line["msg"] == "RunToolCall"
                    and line["dir"] == "send")
    tool_started = next(e for e in server.events(sid) if e["kind"] == "tool_call_started")
    assert (run_tool["session_id"], run_tool["fenced_by"]) == (sid, tool_started["sequence"])
    outcomes = {line.get("outcome") for line in lines
                if line["msg"] == "EffectDone" and line["session_id"] == slow}
    assert outcomes == {"cancelled"}
    assert not [line for line in lines if line["msg"] in ("MetricsReport", "WatchMessage")]
    assert all(isinstance(line["t_us"], int) and "T" in line["wall"] for line in lines)
    # The benchmark that counts messages per turn reads these same lines.
    received, _timers, commits = count(lines)
    assert received[("registry", "ToSession(StartTurn)")] == 1  # the submit is admitted apart
    assert received[("session", "Delivered(StartTurn)")] == 1
    assert received[("session", "Delivered(RunAdmitted)")] == 1
    assert received[("tool_executor", "RunToolCall")] == 1
    assert commits >= 6

    checked = brain_trace("--check", str(trace))
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith("ok: 4 effect messages")  # 2 model, 1 tool, 1 cancelled

    page = tmp_path / "trace.html"
    shown = brain_trace(str(trace), "--request", request_id, "--html", str(page))
    assert shown.returncode == 0, shown.stderr
    assert f"session {sid}" in shown.stdout and slow not in shown.stdout
    assert "RunToolCall fenced by" in shown.stdout and "◆" in shown.stdout
    html = page.read_text()
    assert "<svg" in html and "RunToolCall fenced by" in html
    assert "src=" not in html and "href=" not in html  # nothing fetched from anywhere


def test_trace_all_adds_the_housekeeping(tmp_path: Path) -> None:
    trace = tmp_path / "all.jsonl"
    server = configured(tmp_path, CONFIG, {"BRAIN_TRACE": str(trace),
                                           "BRAIN_TRACE_ALL": "1"}).start()
    try:
        sid = server.create_session(model="tooluser", tools=["echo"])["id"]
        for text in ("go", "again", "once more"):
            assert server.send(sid, text)["status"] == "ended"
        wait_for(lambda: any(line["msg"] == "MetricsReport" for line in trace_lines(trace)),
                 timeout=10, what="a metrics flush in the trace")
    finally:
        server.kill()
    # Released after each turn, the session's metrics ride with its Released, and the registry
    # passes them on in batches: opening the session again costs no report of its own.
    sent = [line for line in trace_lines(trace)
            if line["msg"] == "MetricsReport" and line["dir"] == "send"]
    assert {line["kind"] for line in sent} == {"registry"}, sent
