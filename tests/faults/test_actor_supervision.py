"""One process dies, the server goes on: each of Brain's actors SIGKILLed alone, mid-work, on a
real server. The turns that waited on it end within seconds (the effects it held recorded
`unknown`, never sent again), every journal verifies, `/metrics` counts the exit, `/readyz` is
ready again, and the next turn works. The registry cannot be rebuilt while turns run, so its
death stops `brain serve` at once, non-zero, with one line saying why.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults.checks import journal, unmatched_starts, verify
from tests.support.metrics_scrape import scrape, value
from tests.support.server import BrainServer, configured, group_pids
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow_e2e  # SIGKILLs of real actors: the journals and the OS, on any Python

CONFIG = """
[models.slow]
provider = "scripted"
script = [ { text = "answered", delay_ms = 20000 } ]

[models.napper]
provider = "scripted"
script = [
  { tool_calls = [ { name = "nap", input = { seconds = 20 } } ] },
  { text = "rested" },
]

[tools.nap]
route = "builtin"
function = "sleep"
description = "Sleep for `seconds`."
"""
SETTLE_SECS = 10.0  # a turn waiting on a killed executor ends well within this


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    s = configured(tmp_path_factory.mktemp("supervision"), CONFIG).start()
    try:
        yield s
    finally:
        s.kill()


def processes_named(s: BrainServer, comm: str) -> list[int]:
    """The server's processes whose kernel name (brain/actors/thespian/proctitle.py) starts
    `comm`."""
    found = []
    for pid in group_pids(s.proc.pid):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip().startswith(comm):
                found.append(pid)
        except OSError:
            continue
    return found


def kill_one(s: BrainServer, comm: str) -> int:
    pids = processes_named(s, comm)
    assert len(pids) == 1, (comm, pids)
    os.kill(pids[0], signal.SIGKILL)
    return pids[0]


def send_in_background(s: BrainServer, session_id: str) -> tuple[threading.Thread, dict]:
    answer: dict[str, Any] = {}

    def send() -> None:
        resp = s.request("POST", f"/v1/sessions/{session_id}/messages", json={"input": "hi"},
                         timeout=60)
        answer.update(status=resp.status_code, body=resp.json(), at=time.monotonic())

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread, answer


def wait_for_record(s: BrainServer, session_id: str, kind: str) -> None:
    wait_for(lambda: any(r["kind"] == kind for r in journal(s.data_dir, session_id)),
             timeout=20, what=kind)


def assert_settled(s: BrainServer, session_id: str, effect: str) -> dict[str, Any]:
    """The journal verifies, every start has one terminal, and the effect ended `unknown`."""
    records = journal(s.data_dir, session_id)
    assert unmatched_starts(records) == []
    assert verify(s.data_dir, session_id) == ""
    failed = [r for r in records if r["kind"] == f"{effect}_failed"]
    assert len(failed) == 1 and failed[0]["outcome"] == "unknown", records
    assert sum(r["kind"] == f"{effect}_started" for r in records) == 1
    return failed[0]


def exits_counted(s: BrainServer, actor: str) -> float:
    _, samples = scrape(s)
    return value(samples, "brain_actor_exits_total", actor=actor) or 0.0


def ready(s: BrainServer) -> bool:
    return s.request("GET", "/readyz", token=None).status_code == 200


def test_a_killed_model_executor_fails_only_the_call_it_held(server: BrainServer) -> None:
    session = server.create_session(model="slow")["id"]
    thread, answer = send_in_background(server, session)
    wait_for_record(server, session, "model_call_started")
    kill_one(server, "brain-model-exe")
    killed_at = time.monotonic()
    thread.join(SETTLE_SECS + 5)
    assert answer["status"] == 200 and answer["at"] - killed_at < SETTLE_SECS, answer
    assert answer["body"]["status"] == "failed"
    assert answer["body"]["error"]["code"] == "model_call_failed"
    failed = assert_settled(server, session, "model_call")
    assert "model executor exited" in failed["error"]["message"]
    wait_for(lambda: exits_counted(server, "model executor") >= 1, timeout=10,
             what="the exit counted")
    assert wait_for(lambda: ready(server), timeout=10, what="ready again")
    fresh = server.create_session()["id"]
    assert server.send(fresh, "hello")["status"] == "ended"
    assert "killed by SIGKILL" in server.log()


def test_a_killed_tool_executor_lets_the_turn_go_on(server: BrainServer) -> None:
    """The Agentloop sees the Tool's `unknown` outcome and goes on to its next model call."""
    session = server.create_session(model="napper", tools=["nap"])["id"]
    thread, answer = send_in_background(server, session)
    wait_for_record(server, session, "tool_call_started")
    kill_one(server, "brain-tool-exec")
    killed_at = time.monotonic()
    thread.join(SETTLE_SECS + 5)
    assert answer["status"] == 200 and answer["at"] - killed_at < SETTLE_SECS, answer
    assert answer["body"]["status"] == "ended" and answer["body"]["output"] == "rested"
    failed = assert_settled(server, session, "tool_call")
    assert failed["result"]["is_error"] is True
    assert wait_for(lambda: ready(server), timeout=10, what="ready again")
    assert server.send(server.create_session()["id"], "again")["status"] == "ended"


def test_a_cancel_of_a_turn_whose_executor_died_completes(server: BrainServer) -> None:
    session = server.create_session(model="slow")["id"]
    resp = server.request("POST", f"/v1/sessions/{session}/messages", json={"input": "hi"},
                          headers={"Prefer": "respond-async"})
    assert resp.status_code == 202, resp.text
    wait_for_record(server, session, "model_call_started")
    kill_one(server, "brain-model-exe")
    assert server.request("POST", f"/v1/sessions/{session}/cancel").status_code in (200, 202)
    wait_for(lambda: server.request("GET", f"/v1/sessions/{session}").json()["status"]
             == "idle", timeout=SETTLE_SECS, what="the turn ended")
    assert_settled(server, session, "model_call")
    assert server.send(session, "next")["status"] in ("ended", "failed")  # not session_busy


def test_suspended_turns_all_end_when_their_executor_dies(tmp_path: Path) -> None:
    suspended_turns_end_when_their_executor_dies(tmp_path, 25)


@pytest.mark.torture
def test_a_hundred_suspended_turns_all_end_when_their_executor_dies(tmp_path: Path) -> None:
    suspended_turns_end_when_their_executor_dies(tmp_path, 100)


def suspended_turns_end_when_their_executor_dies(tmp_path: Path, turns: int) -> None:
    """With one session actor, each turn is suspended while its model call runs (the registry
    keeps it, no actor holds it); the registry settles each when the executor dies."""
    s = configured(tmp_path, CONFIG, {"BRAIN_SESSION_POOL_SIZE": "1",
                                      "BRAIN_MAX_SESSION_ACTORS": "1"}).start()
    try:
        sessions = [s.create_session(model="slow")["id"] for _ in range(turns)]
        for session in sessions:
            resp = s.request("POST", f"/v1/sessions/{session}/messages", json={"input": "hi"},
                             headers={"Prefer": "respond-async"})
            assert resp.status_code == 202, resp.text
        for session in sessions:
            wait_for_record(s, session, "model_call_started")
        wait_for(lambda: (value(scrape(s)[1], "brain_turns_suspended") or 0) >= turns - 1,
                 timeout=20, what="the turns suspended")
        kill_one(s, "brain-model-exe")
        killed_at = time.monotonic()
        deadline = killed_at + 60
        for session in sessions:
            wait_for(lambda x=session: s.request("GET", f"/v1/sessions/{x}").json()["status"]
                     == "idle", timeout=max(1.0, deadline - time.monotonic()),
                     what=f"{session} settled")
        print(f"\n{turns} suspended turns settled {time.monotonic() - killed_at:.1f} s after "
              "the kill")
        for session in sessions:
            assert_settled(s, session, "model_call")
        assert s.send(sessions[0], "again")["status"] in ("ended", "failed")
    finally:
        s.kill()


def test_a_killed_registry_stops_the_server_with_one_line(tmp_path: Path) -> None:
    s = configured(tmp_path, CONFIG).start()
    try:
        kill_one(s, "brain-registry")
        s.proc.wait(timeout=30)
        assert s.proc.returncode not in (0, None)
        assert "the registry actor exited" in s.log()
        assert group_pids(s.proc.pid) == [] or wait_for(
            lambda: group_pids(s.proc.pid) == [], timeout=15, what="every process gone")
    finally:
        s.kill()
