"""Host Tools and host Environments over raw HTTP against a real server (docs/host-tools.md).

The test process is the host: it long-polls POST /v1/host/poll and answers POST
/v1/host/calls/{id} itself, so every rule of the protocol is visible: one delivery per call,
`timeout` when no host took a call, `unknown` when one took it and went quiet, cancel notices,
session-token scope, and the lifecycle of a host Environment.

One server for the module; every poll here is synchronous, so none outlives its test.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from brain.journal import JournalScan
from tests.support.guests import example_guest
from tests.support.server import BrainServer, configured
from tests.support.waiting import wait_for

TOOL_SECS = 3
ENVIRONMENT_SECS = 2

CONFIG = """
[tools.hosted]
route = "host"
description = "Served by the test process."

[environments.remote]
kind = "host"

[tools.remote_shell]
route = "environment"
environment = "remote"
op = "exec"
description = "Run a command where the host runs it."

[agentloops.script]
path = "{script}"
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    tmp = tmp_path_factory.mktemp("host")
    s = configured(tmp, CONFIG.format(script=example_guest("host_script")),
                   {"BRAIN_MAX_TOOL_SECS": str(TOOL_SECS),
                    "BRAIN_HOST_ENVIRONMENT_SECS": str(ENVIRONMENT_SECS),
                    "BRAIN_MAX_TURN_SECS": "30",
                    "BRAIN_TRACE": str(tmp / "trace.jsonl")})
    try:
        yield s.start()
    finally:
        s.kill()


def poll(server: BrainServer, wait: float = 10, token: str = "default", **body: Any) -> dict:
    body = {"tools": ["hosted"], "wait_secs": wait, **body}
    resp = server.request("POST", "/v1/host/poll", json=body, token=token)
    assert resp.status_code == 200, resp.text
    return resp.json()


def answer(server: BrainServer, call_id: str, body: dict, token: str = "default") -> Any:
    return server.request("POST", f"/v1/host/calls/{call_id}", json=body, token=token)


def call_hosted(value: Any) -> str:
    return json.dumps([{"op": "tools.call", "calls": [{"name": "hosted", "input": value}]}])


class Turn:
    """A synchronous send running in a thread, so the test can play the host meanwhile."""

    def __init__(self, server: BrainServer, sid: str, text: str) -> None:
        self.result: dict = {}
        self._thread = threading.Thread(
            target=lambda: self.result.update(server.send(sid, text)), daemon=True)
        self._thread.start()

    def wait(self, timeout: float = 30) -> dict:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the turn did not finish"
        return self.result

    def tool_result(self) -> dict:
        [[result]] = [out["results"] for out in self.wait()["output"]]
        return result


def journal(server: BrainServer, sid: str) -> list[dict]:
    return [f.record for f in JournalScan(server.data_dir / "sessions" / sid / "journal")]


def script_session(server: BrainServer, **body: Any) -> str:
    return server.create_session(agentloop="script", tools=["hosted"], **body)["id"]


def test_a_host_tool_is_delivered_once_and_its_answer_journaled(server: BrainServer) -> None:
    sid = script_session(server)
    turn = Turn(server, sid, call_hosted({"word": "hi"}))
    [call] = poll(server)["calls"]
    started = [r for r in journal(server, sid) if r["kind"] == "tool_call_started"]
    assert call == {"call_id": f"{sid}-{started[0]['seq']}", "kind": "tool", "name": "hosted",
                    "session_id": sid, "sequence": started[0]["seq"],
                    "deadline": started[0]["deadline"], "input": {"word": "hi"}}
    assert poll(server, wait=0) == {"calls": [], "cancel": []}  # never handed out again
    bad = answer(server, call["call_id"], {"is_error": "maybe"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request"
    good = answer(server, call["call_id"], {"content": {"meaning": "hello"}, "is_error": False,
                                            "events": [{"kind": "looked_up", "data": {"n": 1}}]})
    assert (good.status_code, good.json()) == (200, {"accepted": True})
    again = answer(server, call["call_id"], {"content": "twice"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_answered"
    assert turn.tool_result() == {"content": {"meaning": "hello"}, "is_error": False,
                                  "outcome": "ok"}
    records = journal(server, sid)
    assert [r["kind"] for r in records].count("tool_call_started") == 1
    [ended] = [r for r in records if r["kind"].startswith("tool_call_") and "started" in r]
    assert (ended["kind"], ended["started"], ended["outcome"]) == \
        ("tool_call_ended", call["sequence"], "ok")
    [event] = [r for r in records if r["kind"] == "extension_event"]
    assert event["origin"] == {"kind": "tool", "sequence": call["sequence"]}


def test_no_host_means_timeout_and_nothing_sent(server: BrainServer) -> None:
    sid = script_session(server)
    began = time.monotonic()
    turn = Turn(server, sid, call_hosted({}))
    result = turn.tool_result()
    assert TOOL_SECS - 0.5 < time.monotonic() - began < TOOL_SECS + 5
    assert (result["outcome"], result["is_error"]) == ("timeout", True)
    assert "nothing was sent" in result["content"]
    assert poll(server, wait=0)["calls"] == []  # the timed-out call is gone for good
    started = [r for r in journal(server, sid) if r["kind"] == "tool_call_started"][0]["seq"]
    late = answer(server, f"{sid}-{started}", {"content": "late"})
    assert late.status_code == 404 and late.json()["error"]["code"] == "not_found"


def test_a_host_that_takes_the_call_and_never_answers_leaves_it_unknown(
    server: BrainServer,
) -> None:
    sid = script_session(server)
    turn = Turn(server, sid, call_hosted({}))
    [call] = poll(server)["calls"]
    result = turn.tool_result()  # the host stays silent past the deadline
    assert (result["outcome"], result["is_error"]) == ("unknown", True)
    [failed] = [r for r in journal(server, sid) if r["kind"] == "tool_call_failed"]
    assert failed["outcome"] == "unknown" and failed["started"] == call["sequence"]
    assert answer(server, call["call_id"], {"content": "too late"}).status_code == 404


def test_cancel_before_delivery_sends_nothing_and_after_delivery_tells_the_host(
    server: BrainServer,
) -> None:
    sid = script_session(server)
    turn = Turn(server, sid, call_hosted({"n": 1}))
    wait_for(lambda: any(r["kind"] == "tool_call_started" for r in journal(server, sid)),
             timeout=10, what="the tool call")
    assert server.request("POST", f"/v1/sessions/{sid}/cancel").status_code == 202
    result = turn.wait()
    assert result["error"]["code"] == "cancelled"
    [failed] = [r for r in journal(server, sid) if r["kind"] == "tool_call_failed"]
    assert failed["outcome"] == "cancelled"
    assert "nothing was sent" in failed["result"]["content"]
    assert poll(server, wait=0)["calls"] == []

    turn = Turn(server, sid, call_hosted({"n": 2}))
    [call] = poll(server)["calls"]
    assert server.request("POST", f"/v1/sessions/{sid}/cancel").status_code == 202
    notice = poll(server)  # answers as soon as the cancellation is known
    assert notice == {"calls": [], "cancel": [call["call_id"]]}
    stopped = answer(server, call["call_id"], {"content": "stopped early", "is_error": True,
                                               "outcome": "cancelled"})
    assert stopped.status_code == 200
    assert turn.wait()["error"]["code"] == "cancelled"
    failed = [r for r in journal(server, sid) if r["kind"] == "tool_call_failed"][-1]
    assert (failed["outcome"], failed["result"]["content"]) == ("cancelled", "stopped early")


def test_a_session_token_serves_only_its_own_session(server: BrainServer) -> None:
    mine, theirs = script_session(server), script_session(server)
    token = server.request("POST", f"/v1/sessions/{mine}/tokens").json()["token"]
    their_turn = Turn(server, theirs, call_hosted({"who": "them"}))
    wait_for(lambda: any(r["kind"] == "tool_call_started" for r in journal(server, theirs)),
             timeout=10, what="their tool call")
    my_turn = Turn(server, mine, call_hosted({"who": "me"}))
    [call] = poll(server, token=token)["calls"]
    assert (call["session_id"], call["input"]) == (mine, {"who": "me"})
    assert answer(server, call["call_id"], {"content": "mine"}, token=token).status_code == 200
    [theirs_call] = poll(server)["calls"]  # the operator serves every session
    assert theirs_call["session_id"] == theirs
    foreign = answer(server, theirs_call["call_id"], {"content": "not yours"}, token=token)
    assert foreign.status_code == 404
    assert answer(server, theirs_call["call_id"], {"content": "theirs"}).status_code == 200
    assert my_turn.tool_result()["content"] == "mine"
    assert their_turn.tool_result()["content"] == "theirs"


def test_polls_and_answers_are_checked(server: BrainServer) -> None:
    for body in ({"tools": ["echo"]}, {"tools": ["nowhere"]}, {"environments": ["local"]},
                 {"tools": []}, {"tools": ["hosted"], "wait_secs": 31},
                 {"tools": ["hosted"], "max_calls": -1}, {"tools": ["hosted"], "surprise": 1}):
        resp = server.request("POST", "/v1/host/poll", json=body)
        assert resp.status_code == 400, (body, resp.text)
        assert resp.json()["error"]["code"] == "invalid_request"
    assert server.request("POST", "/v1/host/poll", json={"tools": ["hosted"]},
                          token=None).status_code == 401
    missing = answer(server, "0123-4", {"content": 1})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert answer(server, "not an id", {"content": 1}).status_code == 404


def host_environment_op(server: BrainServer, op: str, result: dict) -> dict:
    """Play the host of `remote` for one op: take it, check it, answer it."""
    [call] = poll(server, tools=[], environments=["remote"])["calls"]
    assert (call["kind"], call["name"], call["op"]) == ("environment", "remote", op)
    assert answer(server, call["call_id"], {"result": result}).status_code == 200
    return call


def test_a_host_environment_is_set_up_used_detached_and_torn_down(
    server: BrainServer,
) -> None:
    created: dict = {}
    creating = threading.Thread(target=lambda: created.update(server.create_session(
        agentloop="script", tools=["remote_shell"], environments=["remote"])), daemon=True)
    creating.start()
    setup = host_environment_op(server, "setup", {"ready": True})
    creating.join(20)
    assert created["status"] == "idle" and setup["request"] == {}
    sid = created["id"]
    turn = Turn(server, sid, json.dumps([{"op": "tools.call", "calls": [
        {"name": "remote_shell", "input": {"argv": ["uname"]}}]}]))
    [call] = poll(server, tools=[], environments=["remote"])["calls"]
    assert (call["op"], call["request"]) == ("exec", {"argv": ["uname"]})
    answer(server, call["call_id"], {"result": {"exit_code": 0, "stdout": "Hosted\n"}})
    assert turn.tool_result()["content"] == {"exit_code": 0, "stdout": "Hosted\n"}
    ending = threading.Thread(target=lambda: server.request("POST", f"/v1/sessions/{sid}/end"),
                              daemon=True)
    ending.start()
    host_environment_op(server, "detach", {})
    ending.join(20)
    assert server.request("GET", f"/v1/sessions/{sid}").json()["status"] == "ended"
    deleted: dict = {}
    deleting = threading.Thread(target=lambda: deleted.update(
        status=server.request("DELETE", f"/v1/sessions/{sid}").status_code), daemon=True)
    deleting.start()
    host_environment_op(server, "teardown", {"removed": True})
    deleting.join(20)
    assert deleted["status"] == 204
    assert server.request("GET", f"/v1/sessions/{sid}").status_code == 404


def test_without_a_host_create_fails_cleanly_and_delete_still_works(
    server: BrainServer,
) -> None:
    began = time.monotonic()
    session = server.create_session(environments=["remote"])
    assert session["status"] == "failed"
    assert time.monotonic() - began < ENVIRONMENT_SECS + 5
    [failed] = [r for r in journal(server, session["id"])
                if r["kind"] == "environment_op_failed"]
    assert failed["outcome"] == "timeout"
    deleted = server.request("DELETE", f"/v1/sessions/{session['id']}")
    assert deleted.status_code == 204, deleted.text


def test_every_host_call_offer_left_after_its_commit(server: BrainServer) -> None:
    """Runs last: the trace of every test above, host offers and cancels included, passes
    `brain trace --check` (docs/operations.md, "Tracing actor messages")."""
    import subprocess
    import sys
    import time

    time.sleep(0.3)  # the last lines reach the file within 100 ms
    trace = server.data_dir.parent / "trace.jsonl"
    checked = subprocess.run([sys.executable, "-m", "brain.cli", "trace", "--check", str(trace)],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    assert '"msg":"HostCallOffer"' in trace.read_text()
