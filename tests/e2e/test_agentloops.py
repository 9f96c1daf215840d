"""Agentloops chosen by name, checked by hash and sandboxed, through a real server (issue 7)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain.journal import JournalScan
from tests.agentloop.helpers import compile_guest
from tests.support.guests import example_guest
from tests.support.server import BrainServer, configured


@pytest.fixture
def server(tmp_path: Path) -> Iterator[BrainServer]:
    guests = tmp_path / "guests"
    mine = guests / "mine.wasm"
    guests.mkdir()
    shutil.copy(example_guest("host_script"), mine)
    spin = compile_guest("spin", guests)
    trap = compile_guest("trap", guests)
    s = configured(tmp_path,
                   f'[agentloops.mine]\npath = "{mine}"\n'
                   f'[agentloops.spin]\npath = "{spin}"\n'
                   f'[agentloops.trap]\npath = "{trap}"\n',
                   {"BRAIN_MAX_TURN_SECS": "2",
                    "BRAIN_TELEMETRY_SINK": str(tmp_path / "telemetry.jsonl")})
    try:
        yield s.start()
    finally:
        s.kill()


def test_module_hash_is_recorded_and_a_changed_file_refused(server: BrainServer,
                                                            tmp_path: Path) -> None:
    session = server.create_session(agentloop="mine")
    recorded = session["config"]["agentloop"]
    assert recorded["name"] == "mine" and len(recorded["sha256"]) == 64
    assert server.send(server_sid := session["id"], "[]")["status"] == "ended"
    shutil.copy(example_guest("turn_counter"), tmp_path / "guests" / "mine.wasm")
    result = server.send(server_sid, "[]")
    assert result["status"] == "failed"
    assert result["error"]["code"] == "agentloop_error"
    assert "changed since the session was created" in result["error"]["message"]


def test_runaway_guest_is_stopped_at_the_turn_deadline(server: BrainServer) -> None:
    sid = server.create_session(agentloop="spin")["id"]
    result = server.send(sid, "loop forever")
    assert (result["status"], result["error"]["code"]) == ("failed", "turn_timeout")
    kinds = [e["kind"] for e in server.events(sid)]
    assert kinds[-2:] == ["activation_failed", "turn_failed"]
    assert server.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle"


def test_trapping_guest_fails_its_turn_and_the_session_stays_usable(server: BrainServer) -> None:
    sid = server.create_session(agentloop="trap")["id"]
    for _ in range(2):
        result = server.send(sid, "boom")
        assert (result["status"], result["error"]["code"]) == ("failed", "agentloop_error")
        assert result["error"]["message"]


def test_telemetry_goes_to_the_sink_never_the_journal(server: BrainServer,
                                                      tmp_path: Path) -> None:
    sid = server.create_session(agentloop="mine")["id"]
    out = server.send(sid, json.dumps([{"op": "telemetry.record", "name": "tokens",
                                        "value": 42, "attributes": {"phase": "plan"}}]))
    assert out["output"] == [{}]
    lines = [json.loads(line) for line in
             (tmp_path / "telemetry.jsonl").read_text().splitlines()]
    assert [(x["session_id"], x["name"], x["value"]) for x in lines] == [(sid, "tokens", 42)]
    records = [f.record for f in JournalScan(server.data_dir / "sessions" / sid / "journal")]
    mentions = [r["kind"] for r in records if "tokens" in json.dumps(r)]
    assert mentions == ["turn_started"]  # only the input that asked for it
