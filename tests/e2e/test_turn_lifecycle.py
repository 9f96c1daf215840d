"""Turn limits and cancellation (docs/concepts.md, "Turns"), through a real server."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.server import BrainServer, configured
from tests.support.waiting import wait_for

SLOW_MODEL = """
[models.slow]
provider = "scripted"
script = [ { text = "too late", delay_ms = 20000 } ]
"""


# The module's servers are shared by its tests: each works in a session of its own.
@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    server = configured(tmp_path_factory.mktemp("slow"), SLOW_MODEL,
                        {"BRAIN_MAX_TURN_SECS": "3"}).start()
    try:
        yield server
    finally:
        server.kill()


def submit(server: BrainServer, sid: str, text: str) -> dict:
    resp = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": text},
                          headers={"Prefer": "respond-async"})
    assert resp.status_code == 202, resp.text
    assert resp.headers["Preference-Applied"] == "respond-async"
    assert resp.headers["Location"] == f"/v1/sessions/{sid}"
    return resp.json()


def events_by_kind(server: BrainServer, sid: str) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for event in server.events(sid):
        grouped.setdefault(event["kind"], []).append(event)
    return grouped


def test_cancel_during_a_slow_model_call(slow_server: BrainServer) -> None:
    s = slow_server
    sid = s.create_session(model="slow")["id"]
    receipt = submit(s, sid, "take your time")
    assert receipt["session_id"] == sid
    wait_for(lambda: "model_call_started" in events_by_kind(s, sid), what="model call")
    busy = s.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "again"},
                     headers={"Prefer": "respond-async"})
    assert (busy.status_code, busy.json()["error"]["code"]) == (409, "session_busy")
    cancel = s.request("POST", f"/v1/sessions/{sid}/cancel")
    assert cancel.status_code == 202
    assert cancel.json()["sequence"] > receipt["sequence"]
    wait_for(lambda: s.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle",
             timeout=15, what="idle after cancel")
    grouped = events_by_kind(s, sid)
    assert grouped["cancel_requested"][0]["data"]["turn"] == receipt["sequence"]
    [failed_call] = grouped["model_call_failed"]
    assert failed_call["data"]["outcome"] == "cancelled"
    assert failed_call["data"]["started"] == grouped["model_call_started"][0]["sequence"]
    [turn_failed] = grouped["turn_failed"]
    assert turn_failed["data"]["error"]["code"] == "cancelled"
    assert turn_failed["data"]["started"] == receipt["sequence"]
    # The session stays available for another turn.
    assert s.send(sid, "hello again")["status"] in ("ended", "failed")


def test_turn_wall_deadline_cancels_and_fails_the_turn(slow_server: BrainServer) -> None:
    s = slow_server
    sid = s.create_session(model="slow")["id"]
    result = s.send(sid, "this will not finish in 3 s")
    assert result["status"] == "failed"
    assert result["error"]["code"] == "turn_timeout"
    grouped = events_by_kind(s, sid)
    assert grouped["model_call_failed"][0]["data"]["outcome"] == "cancelled"
    assert grouped["turn_failed"][0]["data"]["error"]["code"] == "turn_timeout"
    assert s.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle"


def test_cancel_while_idle_is_a_no_op(brain_server: BrainServer) -> None:
    sid = brain_server.create_session()["id"]
    before = brain_server.events(sid)
    resp = brain_server.request("POST", f"/v1/sessions/{sid}/cancel")
    assert (resp.status_code, resp.json()) == (200, {"session_id": sid, "sequence": None})
    assert brain_server.events(sid) == before


MEDIUM_MODEL = """
[models.medium]
provider = "scripted"
script = [ { text = "done", delay_ms = 1500 } ]
"""


def test_end_waits_for_the_active_turn(tmp_path: Path) -> None:
    s = configured(tmp_path, MEDIUM_MODEL).start()
    try:
        sid = s.create_session(model="medium")["id"]
        submit(s, sid, "work a while")
        ended = s.request("POST", f"/v1/sessions/{sid}/end")
        assert ended.status_code == 200 and ended.json()["status"] == "ended"
        kinds = [e["kind"] for e in s.events(sid)]
        assert kinds.index("turn_ended") < kinds.index("session_ending")
        assert kinds[-1] == "session_ended"
    finally:
        s.kill()


LOOPING_MODEL = """
[models.looper]
provider = "scripted"
script = [ { tool_calls = [ { name = "echo", input = { again = true } } ] } ]

[models.sleeper]
provider = "scripted"
script = [ { tool_calls = [ { name = "sleep", input = { seconds = 30 } } ] }, { text = "woke" } ]

[tools.sleep]
route = "builtin"
function = "sleep"
description = "Sleep."
"""


@pytest.fixture(scope="module")
def tool_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    server = configured(tmp_path_factory.mktemp("tools"), LOOPING_MODEL,
                        {"BRAIN_MAX_MODEL_CALLS": "3"}).start()
    try:
        yield server
    finally:
        server.kill()


def test_model_call_limit_fails_the_turn(tool_server: BrainServer) -> None:
    s = tool_server
    sid = s.create_session(model="looper", tools=["echo"])["id"]
    result = s.send(sid, "loop")
    assert (result["status"], result["error"]["code"]) == ("failed", "model_call_limit")
    grouped = events_by_kind(s, sid)
    assert len(grouped["model_call_started"]) == 3  # the fourth was refused, never journaled
    assert s.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle"


def test_cancel_during_a_slow_builtin_tool(tool_server: BrainServer) -> None:
    s = tool_server
    sid = s.create_session(model="sleeper", tools=["sleep"])["id"]
    receipt = submit(s, sid, "nap")
    wait_for(lambda: "tool_call_started" in events_by_kind(s, sid), what="tool call")
    started = time.monotonic()
    assert s.request("POST", f"/v1/sessions/{sid}/cancel").status_code == 202
    wait_for(lambda: s.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle",
             timeout=15, what="idle after cancel")
    assert time.monotonic() - started < 10  # not the tool's 30 s
    grouped = events_by_kind(s, sid)
    [failed] = grouped["tool_call_failed"]
    assert (failed["data"]["outcome"], failed["data"]["result"]["is_error"]) == ("cancelled", True)
    [turn_failed] = grouped["turn_failed"]
    assert turn_failed["data"]["started"] == receipt["sequence"]
    assert turn_failed["data"]["error"]["code"] == "cancelled"
