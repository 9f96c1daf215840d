"""Lower limits asked for by a create or a message body, and the warning about an Agentloop
that computes too long, through a real server (docs/agentloop.md, "A short deadline while you
develop")."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agentloop.helpers import compile_guest
from tests.support.server import BrainServer, configured
from tests.support.waiting import wait_for

SCRIPTED_TWICE = """
[models.chatty]
provider = "scripted"
script = [ { text = "one" }, { text = "two" }, { text = "three" } ]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    root = tmp_path_factory.mktemp("asked-limits")
    guests = root / "guests"
    guests.mkdir()
    spin = compile_guest("spin", guests)
    s = configured(root, f'[agentloops.spin]\npath = "{spin}"\n' + SCRIPTED_TWICE,
                   {"BRAIN_MAX_TURN_SECS": "60", "BRAIN_MAX_MODEL_CALLS": "10",
                    "BRAIN_COMPUTE_WARN_SECS": "2"})
    try:
        yield s.start()
    finally:
        s.kill()


def test_a_lower_deadline_is_recorded_shown_and_applied(server: BrainServer) -> None:
    session = server.create_session(agentloop="spin", limits={"max_turn_secs": 3})
    assert session["config"]["limits"] == {"max_turn_secs": 3, "max_model_calls": 10}
    sid = session["id"]
    view = server.request("GET", f"/v1/sessions/{sid}").json()
    assert view["config"]["limits"] == {"max_turn_secs": 3, "max_model_calls": 10}
    started = time.monotonic()
    result = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "go"}).json()
    took = time.monotonic() - started
    assert result["status"] == "failed" and result["error"]["code"] == "turn_timeout"
    assert 2.5 < took < 20, took  # the session's 3 s, not the server's 60 s


def test_a_spinning_agentloop_is_named_once_in_the_log(server: BrainServer) -> None:
    sid = server.create_session(agentloop="spin", limits={"max_turn_secs": 6})["id"]
    result = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "go"}).json()
    assert result["error"]["code"] == "turn_timeout"
    wait_for(lambda: f"session {sid}: turn" in server.log(), timeout=10, what="the warning")
    lines = [line for line in server.log().splitlines() if f"session {sid}: turn" in line]
    assert len(lines) == 1, lines
    assert "'spin'" in lines[0] and "computing" in lines[0] and "WARNING" in lines[0]


def test_a_waiting_agentloop_is_not_named(server: BrainServer) -> None:
    sid = server.create_session()["id"]  # the default loop: it waits on the scripted model
    assert server.send(sid, "hello")["status"] == "ended"
    time.sleep(3)
    assert f"session {sid}: turn" not in server.log()


@pytest.mark.parametrize("body, field", [
    ({"max_turn_secs": 61}, "limits.max_turn_secs: 61 is above this server's limit of 60"),
    ({"max_model_calls": 11}, "limits.max_model_calls: 11 is above this server's limit"),
    ({"max_turn_secs": 0}, "limits.max_turn_secs: must be at least 1"),
    ({"deadline": 5}, "limits: unknown field: deadline"),
])
def test_a_create_asking_for_more_is_refused(server: BrainServer, body: dict, field: str
                                             ) -> None:
    resp = server.request("POST", "/v1/sessions", json={"limits": body})
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["code"] == "invalid_request" and error["request_id"]
    assert field in error["message"], error["message"]


def test_a_message_may_lower_its_turns_limits_but_not_raise_them(server: BrainServer) -> None:
    sid = server.create_session(model="chatty", limits={"max_model_calls": 5})["id"]
    above = server.request("POST", f"/v1/sessions/{sid}/messages",
                           json={"input": "hi", "limits": {"max_model_calls": 6}})
    assert above.status_code == 400, above.text
    assert "above the session's limit of 5" in above.json()["error"]["message"]
    ok = server.request("POST", f"/v1/sessions/{sid}/messages",
                        json={"input": "hi", "limits": {"max_model_calls": 1}})
    assert ok.status_code == 200 and ok.json()["status"] == "ended", ok.text
    started = [e for e in server.events(sid) if e["kind"] == "turn_started"]
    assert started[-1]["data"]["limits"] == {"max_model_calls": 1}


def test_an_asked_turn_limit_survives_a_submit(server: BrainServer, tmp_path: Path) -> None:
    sid = server.create_session(agentloop="spin")["id"]
    receipt = server.request("POST", f"/v1/sessions/{sid}/messages",
                             json={"input": "go", "limits": {"max_turn_secs": 2}},
                             headers={"Prefer": "respond-async"})
    assert receipt.status_code == 202, receipt.text
    wait_for(lambda: any(e["kind"] == "turn_failed" for e in server.events(sid)), timeout=20,
             what="the submitted turn's deadline")
    [failed] = [e for e in server.events(sid) if e["kind"] == "turn_failed"]
    assert failed["data"]["error"]["code"] == "turn_timeout"
