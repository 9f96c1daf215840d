"""The actors between a session and a host, SIGKILLed mid-call on a real server: the host
dispatcher while a host holds a Tool call, and the Environment executor while a host sets an
Environment up. What they held ends `unknown` within seconds (well before any deadline), the
journal verifies, and the replacement serves the next call. The test process plays the host
over raw HTTP (docs/host-tools.md)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.faults.checks import journal, unmatched_starts, verify
from tests.faults.test_actor_supervision import kill_one, ready
from tests.support.guests import example_guest
from tests.support.server import BrainServer, configured
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow_e2e  # SIGKILLs of real actors: the journals and the OS, on any Python

CONFIG = """
[tools.hosted]
route = "host"
description = "Served by the test process."

[environments.remote]
kind = "host"

[agentloops.script]
path = "{script}"
"""
DEADLINE_SECS = 45  # far beyond what settling may take (the host Environment bound's most)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    tmp = tmp_path_factory.mktemp("host-supervision")
    s = configured(tmp, CONFIG.format(script=example_guest("host_script")),
                   {"BRAIN_MAX_TOOL_SECS": str(DEADLINE_SECS),
                    "BRAIN_HOST_ENVIRONMENT_SECS": str(DEADLINE_SECS),
                    "BRAIN_MAX_TURN_SECS": str(2 * DEADLINE_SECS)})
    try:
        yield s.start()
    finally:
        s.kill()


def poll(server: BrainServer, **body: Any) -> list[dict]:
    """One long poll; an answer other than 200 (the dispatcher being replaced) is no calls."""
    resp = server.request("POST", "/v1/host/poll", json={"wait_secs": 5, **body}, timeout=30)
    return resp.json()["calls"] if resp.status_code == 200 else []


def test_a_killed_host_dispatcher_settles_the_call_a_host_held(server: BrainServer) -> None:
    sid = server.create_session(agentloop="script", tools=["hosted"])["id"]
    calls = json.dumps([{"op": "tools.call", "calls": [{"name": "hosted", "input": {}}]}])
    answer: dict = {}
    turn = threading.Thread(target=lambda: answer.update(server.send(sid, calls)), daemon=True)
    turn.start()
    [call] = wait_for(lambda: poll(server, tools=["hosted"]), timeout=20, what="the call")
    kill_one(server, "brain-host-disp")  # the host took the call and stays silent
    killed_at = time.monotonic()
    turn.join(20)
    assert not turn.is_alive() and time.monotonic() - killed_at < 15
    [[result]] = [out["results"] for out in answer["output"]]
    assert (result["outcome"], result["is_error"]) == ("unknown", True)
    assert "host dispatcher exited" in result["content"]
    records = journal(server.data_dir, sid)
    assert unmatched_starts(records) == [] and verify(server.data_dir, sid) == ""
    assert sum(r["kind"] == "tool_call_started" for r in records) == 1
    assert wait_for(lambda: ready(server), timeout=10, what="ready again")
    # Each web worker still holds the dead dispatcher's address: its first ask finds the port
    # refusing and goes to the replacement at once, not a 500 (two workers, so some of these
    # land on each).
    statuses = [server.request("POST", "/v1/host/poll", json={"wait_secs": 0.1, "tools": [
        "hosted"]}, timeout=10).status_code for _ in range(6)]
    assert statuses == [200] * 6
    again = threading.Thread(target=lambda: answer.update(server.send(sid, calls)), daemon=True)
    again.start()
    [call] = wait_for(lambda: poll(server, tools=["hosted"]), timeout=20, what="a new call")
    resp = server.request("POST", f"/v1/host/calls/{call['call_id']}",
                          json={"content": "served", "is_error": False})
    assert resp.status_code == 200, resp.text
    again.join(20)
    assert [out["results"] for out in answer["output"]] == [[
        {"content": "served", "is_error": False, "outcome": "ok"}]]


def test_a_killed_environment_executor_fails_the_setup_it_held(server: BrainServer) -> None:
    created: dict = {}
    creating = threading.Thread(target=lambda: created.update(server.request(
        "POST", "/v1/sessions", json={"environments": ["remote"]}, timeout=60).json()),
        daemon=True)
    creating.start()
    wait_for(lambda: poll(server, tools=[], environments=["remote"]), timeout=20,
             what="the setup offered to the host")
    kill_one(server, "brain-environme")
    killed_at = time.monotonic()
    creating.join(20)
    assert not creating.is_alive() and time.monotonic() - killed_at < 15
    assert created["status"] == "failed", created
    sid = created["id"]
    records = journal(server.data_dir, sid)
    [failed] = [r for r in records if r["kind"] == "environment_op_failed"]
    assert failed["outcome"] == "unknown"
    assert unmatched_starts(records) == [] and verify(server.data_dir, sid) == ""
    assert wait_for(lambda: ready(server), timeout=10, what="ready again")
    assert server.send(server.create_session()["id"], "hello")["status"] == "ended"
