"""SIGTERM drains: no new work is admitted, admitted turns finish, then everything stops."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.server import BrainServer, configured, group_pids
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow_e2e  # signals and deadlines: the OS and the journals, on any Python

MODELS = """
[models.medium]
provider = "scripted"
script = [ { text = "finished during drain", delay_ms = 2500 } ]

[models.endless]
provider = "scripted"
script = [ { text = "never", delay_ms = 60000 } ]
"""


def start(tmp_path: Path, drain_secs: str) -> BrainServer:
    return configured(tmp_path, MODELS, {"BRAIN_DRAIN_SECS": drain_secs}).start()


def submit(server: BrainServer, sid: str) -> int:
    resp = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "go"},
                          headers={"Prefer": "respond-async"})
    assert resp.status_code == 202, resp.text
    return resp.json()["sequence"]


def test_drain_finishes_admitted_turns_and_refuses_new_work(tmp_path: Path) -> None:
    server = start(tmp_path, "30")
    try:
        sid = server.create_session(model="medium")["id"]
        submit(server, sid)
        pgid = server.proc.pid
        server.proc.send_signal(signal.SIGTERM)
        def refused_while_draining() -> dict | None:
            # (A Response is falsy for 4xx/5xx, so return its body, not the Response.)
            resp = server.request("POST", "/v1/sessions", json={})
            return resp.json() if resp.status_code == 503 else None

        refused = wait_for(refused_while_draining, timeout=10, what="503 while draining")
        assert refused["error"]["code"] == "draining"
        # Reads keep answering while the admitted turn finishes.
        assert server.request("GET", f"/v1/sessions/{sid}").status_code == 200
        server.proc.wait(timeout=60)
        wait_for(lambda: not group_pids(pgid), timeout=15, what="every process gone")
    except subprocess.TimeoutExpired:
        raise AssertionError(f"brain serve did not stop:\n{server.log()}") from None
    finally:
        server.kill()
    server = BrainServer(tmp_path / "data", env=server.extra_env).start()
    try:
        kinds = [e["kind"] for e in server.events(sid)]
        assert "turn_ended" in kinds and "turn_failed" not in kinds
        created = server.request("POST", "/v1/sessions", json={})
        assert created.status_code == 201  # a restart is not draining
    finally:
        server.kill()


def test_work_past_the_drain_deadline_is_interrupted_at_next_start(tmp_path: Path) -> None:
    server = start(tmp_path, "1")
    try:
        sid = server.create_session(model="endless")["id"]
        turn = submit(server, sid)
        wait_for(lambda: any(e["kind"] == "model_call_started" for e in server.events(sid)),
                 what="model call")
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=60)
    finally:
        server.kill()
    server = BrainServer(tmp_path / "data", env=server.extra_env).start()
    try:
        wait_for(lambda: server.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle",
                 what="recovered")
        failed = [e for e in server.events(sid) if e["kind"] == "turn_failed"]
        assert [(e["data"]["started"], e["data"]["error"]["code"]) for e in failed] == [
            (turn, "interrupted")]
    finally:
        server.kill()
