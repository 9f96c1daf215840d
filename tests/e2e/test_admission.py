"""Admission without an actor (brain/web/admission.py): an async submit's 202 names a durable
turn_started even when no session actor is free, the turn then runs and ends; a turn admitted
but not yet run when the whole server is SIGKILLed fails `interrupted` after the restart and
never runs; past capacity Brain sheds with 503 `overloaded` and Retry-After, and loses nothing
it accepted.

A turn waiting on its model holds no actor (it is suspended), so the only actor of these
servers is kept busy by an Agentloop that computes until it is cancelled (`spin`)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain.actors.admission_board import BoardReader
from brain.journal import JournalScan, JournalWriter
from tests.agentloop.helpers import compile_guest
from tests.support.server import BrainServer, configured, group_pids, session_processes
from tests.support.waiting import wait_for

SLOW = "slow"
SPIN = "spin"
SUBMIT = {"Prefer": "respond-async"}


def slow_server(tmp_path: Path, delay_ms: int, **env: str) -> BrainServer:
    spin = compile_guest(SPIN, tmp_path / "guests")
    toml = (f'[models.{SLOW}]\nprovider = "scripted"\n'
            f'script = [ {{ text = "done", delay_ms = {delay_ms} }} ]\n'
            f'[agentloops.{SPIN}]\npath = "{spin}"\n')
    return configured(tmp_path, toml, {"BRAIN_SESSION_POOL_SIZE": "1",
                                       "BRAIN_MAX_SESSION_ACTORS": "1", **env})


def busy_actor(server: BrainServer) -> str:
    """A session whose turn computes until cancelled, holding the server's only actor."""
    session_id = server.create_session(agentloop=SPIN)["id"]
    assert submit(server, session_id)[0].status_code == 202
    wait_for(lambda: "activation_started" in kinds(server, session_id), timeout=30,
             what="the spinning turn holds the only actor")
    return session_id


def free(server: BrainServer, session_id: str) -> None:
    """Cancel the spinning turn: the actor is free again."""
    resp = server.request("POST", f"/v1/sessions/{session_id}/cancel")
    assert resp.status_code == 202, resp.text
    wait_for(lambda: settled(server, session_id), timeout=30, what="the spinner stopped")
    assert kinds(server, session_id)[-1] == "turn_failed"


@pytest.fixture
def one_actor(tmp_path: Path) -> Iterator[BrainServer]:
    """One session actor for the whole server, and a model that takes 3 s."""
    server = slow_server(tmp_path, 3000).start()
    try:
        yield server
    finally:
        server.kill()


def kinds(server: BrainServer, session_id: str) -> list[str]:
    journal = server.data_dir / "sessions" / session_id / "journal"
    return [frame.record["kind"] for frame in JournalScan(journal)]


def session_pid(server: BrainServer, session_id: str) -> int:
    title = f"brain: session {session_id}".encode()
    for pid in group_pids(server.proc.pid):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(title):
                return pid
        except OSError:
            continue
    raise AssertionError(f"no process serves session {session_id}")


def submit(server: BrainServer, session_id: str, text: str = "hi", key: str | None = None):
    headers = dict(SUBMIT, **({"Idempotency-Key": key} if key else {}))
    began = time.monotonic()
    resp = server.request("POST", f"/v1/sessions/{session_id}/messages", json={"input": text},
                          headers=headers, timeout=30)
    return resp, time.monotonic() - began


def settled(server: BrainServer, session_id: str) -> str | None:
    status = server.request("GET", f"/v1/sessions/{session_id}").json()["status"]
    return None if status == "running" else status


def assert_shed(resp) -> None:
    assert resp.status_code == 503, resp.text
    assert int(resp.headers["Retry-After"]) >= 1
    error = resp.json()["error"]
    assert error["code"] == "overloaded" and error["message"] and error["request_id"]


def test_submits_are_admitted_while_the_only_actor_is_busy(one_actor):
    server = one_actor
    ids = [server.create_session(model=SLOW)["id"] for _ in range(3)]
    spinner = busy_actor(server)
    for session_id in ids:
        resp, secs = submit(server, session_id)
        assert resp.status_code == 202, resp.text
        assert secs < 1.0, f"202 after {secs:.2f} s"
        receipt = resp.json()
        assert receipt["session_id"] == session_id
        assert kinds(server, session_id)[receipt["sequence"] - 1] == "turn_started"
    # One actor serves them in turn: no fork per admitted session.
    assert session_processes(server) <= 1
    time.sleep(0.5)
    assert all(kinds(server, s)[-1] == "turn_started" for s in ids), "no actor was free"
    free(server, spinner)
    for session_id in ids:
        wait_for(lambda s=session_id: settled(server, s), timeout=60, what="turn over")
        assert kinds(server, session_id)[-2:] == ["activation_ended", "turn_ended"]
    # A busy session's second submit is refused as the actor would refuse it.
    resp, _ = submit(server, ids[0])
    assert resp.status_code == 202
    again, _ = submit(server, ids[0])
    assert again.status_code == 409 and again.json()["error"]["code"] == "session_busy"
    wait_for(lambda: settled(server, ids[0]), timeout=30, what="turn over")


def admitted_behind_a_busy_actor(server: BrainServer) -> tuple[str, str, int]:
    """Two sessions on a one-actor server: the first's turn holds the actor, the second's is
    admitted and waits. The two session ids and the waiting turn's sequence."""
    waiting = server.create_session(model=SLOW)["id"]
    running = busy_actor(server)
    resp, _ = submit(server, waiting)
    assert resp.status_code == 202, resp.text
    return running, waiting, resp.json()["sequence"]


@pytest.mark.slow_e2e  # a SIGKILL and a restart: the journals, on any Python
def test_an_admitted_turn_cut_off_by_a_crash_fails_interrupted_and_never_runs(tmp_path):
    server = slow_server(tmp_path, 8000).start()
    try:
        running, waiting, sequence = admitted_behind_a_busy_actor(server)
        time.sleep(0.5)
        assert kinds(server, waiting)[sequence - 1:] == ["turn_started"]  # admitted, not run
        server.kill()
        server.start()
        for session_id in (running, waiting):
            wait_for(lambda s=session_id: settled(server, s), timeout=30, what="recovered")
        assert kinds(server, waiting)[sequence - 1:] == ["turn_started", "turn_failed"]
        events = server.events(waiting)
        failed = [e for e in events if e["kind"] == "turn_failed"]
        assert failed[-1]["data"]["error"]["code"] == "interrupted"
        time.sleep(1.0)  # nothing runs it later either
        assert "activation_started" not in kinds(server, waiting)[sequence - 1:]
    finally:
        server.kill()


@pytest.mark.slow_e2e  # a journal's lock held past a wait: the OS, on any Python
def test_an_admitted_turn_whose_journal_stays_locked_is_handed_back_and_runs(tmp_path):
    """The actor handed an admitted turn finds the journal locked past its bounded wait (here
    the test holds the lock): the turn goes back to the registry and runs once it is free."""
    server = slow_server(tmp_path, 2000).start()
    try:
        running, waiting, sequence = admitted_behind_a_busy_actor(server)
        holder = JournalWriter.open(server.data_dir / "sessions" / waiting / "journal")
        try:
            free(server, running)  # the actor takes the admitted turn and finds it locked
            wait_for(lambda: "the admitted turn goes back to the registry"
                     in server.log_path.read_text(errors="replace"),
                     timeout=30, what="the actor gave the turn back")
            assert kinds(server, waiting)[sequence - 1:] == ["turn_started"], "not run yet"
        finally:
            holder.close()
        wait_for(lambda: settled(server, waiting), timeout=30, what="the turn ran")
        after = kinds(server, waiting)[sequence - 1:]
        assert after[-2:] == ["activation_ended", "turn_ended"]
        assert after.count("activation_started") == 1
    finally:
        server.kill()


def test_past_capacity_work_is_shed_with_503_and_retry_after(tmp_path):
    server = slow_server(tmp_path, 3000, BRAIN_ADMISSION_BACKLOG="1").start()
    try:
        queued, shed, sync = (server.create_session(model=SLOW)["id"] for _ in range(3))
        running = busy_actor(server)
        assert submit(server, queued)[0].status_code == 202
        board = BoardReader(server.data_dir)
        wait_for(lambda: board.read()[0] >= 1, timeout=10, what="the backlog is full")
        resp, secs = submit(server, shed, key="shed-1")
        assert_shed(resp)
        assert secs < 1.0
        resp = server.request("POST", f"/v1/sessions/{sync}/messages", json={"input": "x"},
                              timeout=30)
        assert_shed(resp)
        assert kinds(server, shed)[-1] == "session_created"  # nothing was started
        free(server, running)
        wait_for(lambda: settled(server, queued), timeout=60, what="turn over")
        assert kinds(server, queued)[-1] == "turn_ended"
        # The shed request's Idempotency-Key was not spent: the same key runs the retry.
        resp = wait_for(lambda: (r := submit(server, shed, key="shed-1")[0]).status_code == 202
                        and r, timeout=30, interval=1.0, what="the retry is admitted")
        replay, _ = submit(server, shed, key="shed-1")
        assert replay.status_code == 202 and replay.json() == resp.json()
        wait_for(lambda: settled(server, shed), timeout=60, what="turn over")
        assert kinds(server, shed)[-1] == "turn_ended"
    finally:
        server.kill()


def test_a_sync_send_waiting_past_the_bound_gets_a_clear_answer(tmp_path):
    server = slow_server(tmp_path, 6000, BRAIN_ADMISSION_WAIT_SECS="1").start()
    try:
        waiting = server.create_session(model=SLOW)["id"]
        running = busy_actor(server)
        began = time.monotonic()
        resp = server.request("POST", f"/v1/sessions/{waiting}/messages", json={"input": "x"},
                              timeout=30)
        assert_shed(resp)
        assert time.monotonic() - began < 4.0
        assert kinds(server, waiting)[-1] == "session_created"
        free(server, running)
        assert server.send(waiting, "now")["status"] == "ended"
    finally:
        server.kill()


def test_a_session_actor_that_dies_alone_has_its_turn_recorded_at_once(tmp_path):
    """No command needed: the registry queues a recovery for the session of an actor that
    exited unexpectedly, so its open turn fails `interrupted` and the session takes turns.
    (A suspension grace longer than the model's answer keeps the waiting turn in its actor.)"""
    server = slow_server(tmp_path, 3000, BRAIN_SUSPEND_AFTER_MS="60000").start()
    try:
        actor_dies_alone(server)
    finally:
        server.kill()


def actor_dies_alone(server: BrainServer) -> None:
    session_id = server.create_session(model=SLOW)["id"]
    assert submit(server, session_id)[0].status_code == 202
    wait_for(lambda: "model_call_started" in kinds(server, session_id), timeout=30,
             what="the turn runs")
    os.kill(session_pid(server, session_id), signal.SIGKILL)
    wait_for(lambda: "turn_failed" in kinds(server, session_id), timeout=30,
             what="the interrupted turn recorded")
    events = server.events(session_id)
    assert [e for e in events if e["kind"] == "turn_failed"][-1]["data"]["error"]["code"] \
        == "interrupted"
    assert server.send(session_id, "again")["status"] == "ended"


def test_a_sync_send_whose_session_actor_dies_is_answered_at_once(tmp_path):
    """The client waiting on the turn hears how it ended as soon as the recovery recorded it,
    not at its turn's deadline: a 200 TurnResult, failed `interrupted`, naming the turn, and the
    same answer again for its Idempotency-Key."""
    server = slow_server(tmp_path, 20000, BRAIN_SUSPEND_AFTER_MS="60000").start()
    try:
        session_id = server.create_session(model=SLOW)["id"]
        answer: dict = {}

        def send() -> None:
            resp = server.request("POST", f"/v1/sessions/{session_id}/messages",
                                  json={"input": "hi"}, headers={"Idempotency-Key": "k-1"},
                                  timeout=120)
            answer.update(status=resp.status_code, body=resp.json(), at=time.monotonic())

        waiting = threading.Thread(target=send, daemon=True)
        waiting.start()
        wait_for(lambda: "model_call_started" in kinds(server, session_id), timeout=30,
                 what="the turn runs")
        os.kill(session_pid(server, session_id), signal.SIGKILL)
        killed_at = time.monotonic()
        waiting.join(60)
        assert not waiting.is_alive(), "the sync send was never answered"
        assert answer["at"] - killed_at < 10.0, answer
        assert answer["status"] == 200, answer
        body = answer["body"]
        assert body["status"] == "failed" and body["error"]["code"] == "interrupted", body
        [failed] = [e for e in server.events(session_id) if e["kind"] == "turn_failed"]
        assert body["sequence"] == failed["data"]["started"] and body["session_id"] == session_id
        again = server.request("POST", f"/v1/sessions/{session_id}/messages",
                               json={"input": "hi"}, headers={"Idempotency-Key": "k-1"},
                               timeout=30)
        assert again.status_code == 200 and again.json() == body
        assert kinds(server, session_id).count("model_call_started") == 1
    finally:
        server.kill()


def web_worker_pids(server: BrainServer) -> list[int]:
    pids = []
    for pid in group_pids(server.proc.pid):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"gunicorn: worker"):
                pids.append(pid)
        except OSError:
            continue
    return pids


def process_age_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return float(Path("/proc/uptime").read_text().split()[0]) - started


def workers_settled(server: BrainServer, count: int = 2, secs: float = 2.0) -> bool:
    """Every web worker has been up a while, so each has done its start-up hand-over."""
    pids = web_worker_pids(server)
    try:
        return len(pids) == count and all(process_age_secs(pid) >= secs for pid in pids)
    except OSError:
        return False


def test_a_turn_whose_worker_died_before_the_hand_over_still_runs(tmp_path):
    """The 202 went out, then the admitting worker died before telling the registry: the worker
    gunicorn starts in its place hands the turn over, with no further command to the session."""
    from brain.settings import Settings
    from brain.web.admission import Admission
    from brain.web.disk_wait import DiskWaitPlacement

    server = slow_server(tmp_path, 10).start()
    try:
        sid = server.create_session()["id"]
        assert server.send(sid, "warm")["status"] == "ended"
        record = json.loads((server.data_dir / "run" / "actor.json").read_text())
        boot_id = record["identity"].rsplit("boot=", 1)[1]
        # A worker still starting would hand the turn over by itself: let both settle first.
        wait_for(lambda: workers_settled(server), timeout=20)
        # What the dead worker did: marker, durable turn_started, 202 - and nothing else.
        # (It can, once the warm turn's actor has let go of the journal's lock.)
        admission = object.__new__(Admission)
        admission._settings = Settings.from_env({"BRAIN_DATA_DIR": str(server.data_dir)})
        admission._placement = DiskWaitPlacement()
        admitted = []

        def admit_as_the_dead_worker() -> bool:
            result = admission._commit(server.data_dir / "sessions" / sid, boot_id, "orphaned")
            if result is not None:
                admitted.append(result)
            return result is not None

        wait_for(admit_as_the_dead_worker, timeout=10)
        [(receipt, sequence)] = admitted
        assert kinds(server, sid)[-1] == "turn_started"
        time.sleep(1.0)
        assert kinds(server, sid)[-1] == "turn_started", "nobody was told; nothing may run"
        [worker, *_] = web_worker_pids(server)
        os.kill(worker, signal.SIGKILL)
        wait_for(lambda: kinds(server, sid)[-1] == "turn_ended", timeout=30)
        started = [k for k in kinds(server, sid) if k == "turn_started"]
        assert len(started) == 2 and receipt["sequence"] == sequence
    finally:
        server.kill()


def test_past_the_memory_budget_new_work_is_refused_and_nothing_is_done(tmp_path):
    """A reserve larger than the machine: every new session and turn is refused with 503
    `overloaded` and Retry-After, with nothing done (docs/configuration.md,
    BRAIN_MEMORY_RESERVE_MB)."""
    server = configured(tmp_path, "", {}).start()
    try:
        session_id = server.create_session()["id"]
    finally:
        server.kill()
    server = configured(tmp_path, "", {"BRAIN_MEMORY_RESERVE_MB": str(1 << 30)}).start()
    try:
        resp = server.request("POST", "/v1/sessions", json={})
        assert_shed(resp)
        assert "memory budget" in resp.json()["error"]["message"]
        assert resp.headers["Retry-After"] == "5"
        for headers in ({}, SUBMIT):
            resp = server.request("POST", f"/v1/sessions/{session_id}/messages",
                                  json={"input": "x"}, headers=headers, timeout=30)
            assert_shed(resp)
            assert resp.headers["Retry-After"] == "5"
        assert kinds(server, session_id) == ["session_created"], "nothing was started"
        assert len(list((server.data_dir / "sessions").iterdir())) == 1, "nothing created"
        # What gives memory back still passes.
        assert server.request("POST", f"/v1/sessions/{session_id}/end").status_code == 200
    finally:
        server.kill()
