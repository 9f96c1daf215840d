"""SIGKILL of every Brain process mid-turn, then restart.

See docs/concepts.md, "Suspension and recovery".

The first access after restart (here: the registry's start-up scan) records the interrupted
turn as failed and every started effect without a terminal as `unknown`; nothing is rerun.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.server import BrainServer, group_pids
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow_e2e  # a SIGKILL and a restart: what it checks is the journals

SLOW_MODEL = """
[models.slow]
provider = "scripted"
script = [ { text = "never delivered", delay_ms = 30000 } ]
"""


def kinds(events: list[dict]) -> list[str]:
    return [e["kind"] for e in events]


def test_sigkill_during_model_call_records_interrupted_work(tmp_path: Path) -> None:
    config = tmp_path / "brain.toml"
    config.write_text(SLOW_MODEL)
    env = {"BRAIN_CONFIG": str(config)}
    server = BrainServer(tmp_path / "data", env=env).start()
    try:
        sid = server.create_session(model="slow")["id"]
        resp = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "hi"},
                              headers={"Prefer": "respond-async"})
        turn = resp.json()["sequence"]
        wait_for(lambda: "model_call_started" in kinds(server.events(sid)), what="model call")
        before = server.events(sid)
        pgid = server.proc.pid
        server.kill()
        assert group_pids(pgid) == [], "SIGKILL of the group must leave no Brain process"

        server = BrainServer(tmp_path / "data", env=env).start()
        wait_for(lambda: server.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle",
                 timeout=30, what="recovery by the start-up scan")
        after = server.events(sid)
        assert after[:len(before)] == before  # committed history is untouched
        added = after[len(before):]
        started = next(e for e in before if e["kind"] == "model_call_started")
        activation = next(e for e in before if e["kind"] == "activation_started")
        assert kinds(added) == ["model_call_failed", "activation_failed", "turn_failed"]
        assert added[0]["data"]["started"] == started["sequence"]
        assert added[0]["data"]["outcome"] == "unknown"
        assert added[1]["data"]["started"] == activation["sequence"]
        assert added[2]["data"] == {"started": turn, "error": added[2]["data"]["error"]}
        assert added[2]["data"]["error"]["code"] == "interrupted"
        assert kinds(after).count("model_call_started") == 1  # never resent
        # The session accepts another turn.
        assert server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "again"},
                              headers={"Prefer": "respond-async"}).status_code == 202
    finally:
        server.kill()
