"""Crash torture of the whole server: SIGKILL of every Brain process under a mixed load.

Sync and async text turns, tool loops against an http Tool server that logs every
invocation, an Agentloop writing kv and extension Events and calling the Tool, idempotent
submits, and SSE followers resuming with Last-Event-ID, while the whole process group is
SIGKILLed at random moments and restarted on the same data dir. After every restart: every
journal verifies, every answer a client received has its records, no Tool invocation arrived
twice, every start has exactly one terminal, no turn ran twice, a keyed retry replays the
answer; at the end each follower saw every committed Event exactly once.
About a third of the rounds SIGKILL one actor process instead (an executor, the host
dispatcher, the metrics actor, a session actor), which the server replaces while it runs on;
the same checks follow. CI runs 20 kills; `-m torture` runs 200.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from brain.journal import SessionReader
from tests.faults import torture_checks as check
from tests.faults.checks import journal
from tests.faults.workload import Answer, Follower, Ledger, Worker, wait_idle
from tests.support.guests import example_guest
from tests.support.server import BrainServer, configured, group_pids
from tests.support.waiting import wait_for
from tests.tools.toolserver import Conn, Received, ToolServer

CONFIG = """
[models.mixed]
provider = "scripted"
script = [
  {{ when_last_user_matches = "^tools-", tool_calls = [ {{ name = "remote", input = {{}} }} ] }},
  {{ when_last_user_matches = "^tools-", delay_ms = 100, text = "tools done" }},
  {{ delay_ms = 150, text = "ok" }},
]

[tools.remote]
route = "http"
url = "{url}"
description = "A remote tool that logs every invocation."

[agentloops.script]
path = "{script}"
"""

MODEL_SESSIONS = 3
SCRIPT_SESSIONS = 2
ONE_PROCESS_SHARE = 0.3
"""The share of rounds that SIGKILL one actor process instead of the whole server."""
REPLACEABLE = ("brain-model-exe", "brain-tool-exec", "brain-host-disp", "brain-metrics",
               "brain-webhook-e", "brain-session", "brain-pooled-se")
"""Kernel names (brain/actors/thespian/proctitle.py) of the actor processes the server replaces."""


def kill_one_actor(server: BrainServer, rng: random.Random) -> None:
    """SIGKILL one replaceable actor process, picked at random; then wait until the server is
    ready again (the replacement is running)."""
    candidates = []
    for pid in group_pids(server.proc.pid):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if name.startswith(REPLACEABLE):
            candidates.append(pid)
    if candidates:
        try:
            os.kill(rng.choice(candidates), signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: server.request("GET", "/readyz", token=None).status_code == 200,
             timeout=30, what="ready after one actor was killed")


def slow_answer(conn: Conn, req: Received) -> None:
    conn.sleep(0.05)  # a window for the kill to land while a Tool call is out
    conn.answer_json({"content": {"ok": req.body["invocation"]["id"]}, "is_error": False})


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[tuple[BrainServer, ToolServer]]:
    tool = ToolServer(slow_answer)
    server = configured(tmp_path, CONFIG.format(url=tool.url,
                                                script=example_guest("host_script")))
    try:
        yield server, tool
    finally:
        server.kill()
        tool.close()


def retry_keyed(server: BrainServer, answers: list[Answer], replays: dict[str, Answer],
                retried: Counter[str]) -> list[str]:
    """Retry every keyed request with its key: the first answer received is replayed."""
    problems = []
    for answer in answers:
        if answer.key is None:
            continue
        headers = {"Idempotency-Key": answer.key}
        if answer.op == "submit":
            headers["Prefer"] = "respond-async"
        resp = server.request("POST", f"/v1/sessions/{answer.session_id}/messages",
                              json={"input": answer.input}, headers=headers)
        first = replays.setdefault(answer.key, answer)
        retried[_retry_kind(first, resp)] += 1
        if first.status is None and resp.status_code in (200, 202):
            first.status, first.body = resp.status_code, resp.content  # answered now
        problems += check.replay_mismatch(first, resp.status_code, resp.content)
    return problems


def _retry_kind(first: Answer, resp: requests.Response) -> str:
    if resp.status_code == 409:
        return resp.json()["error"]["code"]
    if first.status is None:
        return "answered_on_retry"
    return "replayed" if resp.content == first.body else "differed"


def check_after_restart(server: BrainServer, tool: ToolServer, session_ids: list[str],
                        ledger: Ledger, replays: dict[str, Answer]) -> list[str]:
    wait_idle(server, session_ids)
    journals = {sid: journal(server.data_dir, sid) for sid in session_ids}
    problems: list[str] = []
    for sid, records in journals.items():
        problems += check.journal_damage(server.data_dir / "sessions" / sid)
        problems += check.open_work(records)
        problems += check.reruns(records)
        problems += check.unbacked_answers(
            [a for a in ledger.snapshot() if a.session_id == sid], records)
    problems += check.repeated_tool_calls(list(tool.requests), journals)
    return problems


def torture(rig: tuple[BrainServer, ToolServer], kills: int, seed: int) -> None:
    server, tool = rig
    rng = random.Random(seed)
    began = time.monotonic()
    server.start()
    sessions = [(server.create_session(model="mixed", tools=["remote"])["id"], "model")
                for _ in range(MODEL_SESSIONS)]
    sessions += [(server.create_session(agentloop="script", tools=["remote"])["id"], "script")
                 for _ in range(SCRIPT_SESSIONS)]
    session_ids = [sid for sid, _ in sessions]
    ledger, epoch, stop, gate = Ledger(), [0], threading.Event(), threading.Event()
    gate.set()
    workers = [Worker(server, sid, kind, ledger, epoch, stop, gate, seed + i)
               for i, (sid, kind) in enumerate(sessions)]
    followers = [Follower(server, sid, stop) for sid in session_ids]
    for thread in (*workers, *followers):
        thread.start()
    replays: dict[str, Answer] = {}
    retried: Counter[str] = Counter()
    violations: list[str] = []
    try:
        for kill in range(1, kills + 1):
            time.sleep(rng.uniform(0.3, 2.0))  # the load runs; the kill lands anywhere
            gate.clear()
            if rng.random() < ONE_PROCESS_SHARE:
                kill_one_actor(server, rng)  # the rest runs on; the actor is replaced
            else:
                server.kill()
            epoch[0] = kill
            if server.proc is None:
                server.start()
            for worker in workers:  # their requests in flight at the kill are answered or lost
                wait_for(worker.parked.is_set, timeout=60, what=f"{worker.name} parked")
            found = check_after_restart(server, tool, session_ids, ledger, replays)
            found += retry_keyed(server, [a for a in ledger.snapshot() if a.epoch == kill - 1],
                                 replays, retried)
            violations += [f"after kill {kill}: {v}" for v in found]
            assert not violations, "\n".join(violations[:20])
            gate.set()
    finally:
        stop.set()
        for thread in (*workers, *followers):
            thread.join(timeout=20)
    wait_idle(server, session_ids)
    for follower, sid in zip(followers, session_ids, strict=True):
        committed = [e["sequence"] for e in SessionReader(server.data_dir / "sessions" / sid)
                     .events_after(0)]
        catch_up = Follower(server, sid, threading.Event())
        catch_up.seen = list(follower.seen)
        catch_up.start()
        try:
            wait_for(lambda f=catch_up, c=committed: f.caught_up(c[-1]), timeout=30,
                     what=f"follower of {sid} caught up")
        finally:
            catch_up.stop.set()
            catch_up.join(timeout=20)
        violations += check.follower_mismatch(sid, catch_up.seen, committed)
    answers = ledger.snapshot()
    turns = sum(1 for sid in session_ids for r in journal(server.data_dir, sid)
                if r["kind"] == "turn_started")
    effects = sum(1 for sid in session_ids for r in journal(server.data_dir, sid)
                  if r["kind"].endswith("_started") and r["kind"] != "turn_started")
    print(f"\ncrash torture: kills={kills} turns={turns} effects={effects} "
          f"answers={sum(a.status is not None for a in answers)} "
          f"lost_connections={sum(a.status is None for a in answers)} "
          f"tool_invocations={len(tool.requests)} "
          f"sse_reconnects={sum(f.reconnects for f in followers)} "
          f"keyed_retries={dict(retried)} "
          f"violations={len(violations)} secs={time.monotonic() - began:.0f}")
    assert not violations, "\n".join(violations[:20])


@pytest.mark.slow_e2e  # what it checks is the journals and the OS, on any Python
def test_crash_torture_ci(rig: tuple[BrainServer, ToolServer]) -> None:
    torture(rig, kills=20, seed=16)


@pytest.mark.torture
def test_crash_torture_long(rig: tuple[BrainServer, ToolServer]) -> None:
    torture(rig, kills=200, seed=1600)

