"""Session actor rules through a real server: cancel stops a computing Agentloop, refused
commands still release the actor, delete tears down only what was set up, every actor message
is traced, and the server-wide idle TTL."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agentloop.helpers import compile_guest
from tests.support.server import BrainServer, configured, session_processes
from tests.support.waiting import wait_for

TURN_SECS = 60  # far away: only the cancel can end the spinning turn quickly


@pytest.fixture
def server(tmp_path: Path) -> Iterator[BrainServer]:
    spin = compile_guest("spin", tmp_path / "guests")
    s = configured(
        tmp_path,
        f'[agentloops.spin]\npath = "{spin}"\n'
        '[environments.remote]\nkind = "host"\n',
        {"BRAIN_MAX_TURN_SECS": str(TURN_SECS), "BRAIN_TRACE": str(tmp_path / "trace.jsonl"),
         "BRAIN_TRACE_ALL": "1",  # the bridge's wake-ups too
         "BRAIN_HOST_ENVIRONMENT_SECS": "1"},  # no host serves `remote`: its setup times out
    )
    try:
        yield s.start()
    finally:
        s.kill()


def trace_lines(tmp_path: Path) -> list[dict]:
    path = tmp_path / "trace.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_cancel_stops_an_agentloop_computing_on_its_own(
    server: BrainServer, tmp_path: Path
) -> None:
    sid = server.create_session(agentloop="spin")["id"]
    answer: dict = {}
    sender = threading.Thread(target=lambda: answer.update(server.send(sid, "spin")), daemon=True)
    sender.start()
    wait_for(lambda: any(e["kind"] == "activation_started" for e in server.events(sid)),
             timeout=20, what="the activation to start")
    time.sleep(0.3)  # the guest is computing now, making no guest calls
    cancelled_at = time.monotonic()
    receipt = server.request("POST", f"/v1/sessions/{sid}/cancel")
    assert receipt.status_code == 202
    sender.join(timeout=30)
    assert not sender.is_alive()
    assert time.monotonic() - cancelled_at < 10  # not the 60 s turn deadline
    assert answer["status"] == "failed" and answer["error"]["code"] == "cancelled"
    kinds = [e["kind"] for e in server.events(sid)]
    assert kinds[-3:] == ["cancel_requested", "activation_failed", "turn_failed"]
    failed = server.events(sid)[-2]
    assert failed["data"]["error"]["code"] == "cancelled"
    assert server.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle"
    # every actor message is traced, the cancel and the bridge's wake-ups included
    # (lines reach the file within 100 ms of the message, not at once)
    wait_for(lambda: any(line.get("command") == "CancelTurn" for line in trace_lines(tmp_path)),
             timeout=5, what="the cancel in the trace")
    lines = trace_lines(tmp_path)
    commands = {line.get("command") for line in lines if line["msg"] == "Delivered"}
    assert {"CreateSession", "StartTurn", "CancelTurn"} <= commands
    messages = {(line["kind"], line["msg"]) for line in lines if line["dir"] == "recv"}
    assert ("session", "WatchMessage") in messages
    # The released actor let go of the session, and reports it within REPORT_DELAY_SECS.
    wait_for(lambda: any((line["kind"], line["msg"], line["dir"]) == ("registry", "Released",
                                                                      "recv")
                         for line in trace_lines(tmp_path)),
             timeout=5, what="the release report in the trace")


def test_refused_commands_do_not_leave_the_actor_resident(server: BrainServer) -> None:
    warm = server.create_session()["id"]
    server.send(warm, "start the executors")
    time.sleep(0.5)
    baseline = session_processes(server)
    sid = server.create_session()["id"]
    assert server.request("POST", f"/v1/sessions/{sid}/end").status_code == 200
    wait_for(lambda: session_processes(server) == baseline, timeout=15, what="release after end")
    refused = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "late"})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "session_ended"
    wait_for(lambda: session_processes(server) == baseline, timeout=15,
             what="release after a refused message")
    again = server.request("POST", f"/v1/sessions/{sid}/end")  # already ended: answered again
    assert again.status_code == 200
    idle = server.create_session()["id"]
    busy = server.request("DELETE", f"/v1/sessions/{idle}")
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "session_active"
    wait_for(lambda: session_processes(server) == baseline, timeout=15,
             what="release after a refused end and delete")


def test_delete_tears_down_only_environments_that_were_set_up(server: BrainServer) -> None:
    created = server.request("POST", "/v1/sessions", json={"environments": ["remote"]})
    assert created.status_code == 201
    session = created.json()
    assert session["status"] == "failed"  # no host served the host Environment's setup
    sid = session["id"]
    deleted = server.request("DELETE", f"/v1/sessions/{sid}", headers={"Idempotency-Key": "d"})
    assert deleted.status_code == 204, deleted.text
    assert server.request("GET", f"/v1/sessions/{sid}").status_code == 404


def test_server_wide_idle_ttl_retains_then_releases(tmp_path: Path) -> None:
    server = configured(tmp_path, "", {"BRAIN_SESSION_IDLE_TTL_MS": "2000"})
    server.start()
    try:
        warm = server.create_session(idle_ttl_ms=1)["id"]  # its own TTL wins over the server's
        server.send(warm, "start the executors")
        wait_for(lambda: session_processes(server) == 0, timeout=10, what="the warm-up's release")
        baseline = session_processes(server)
        sid = server.create_session()["id"]
        server.send(sid, "turn")
        time.sleep(0.5)
        assert session_processes(server) == baseline + 1  # retained by the server-wide TTL
        wait_for(lambda: session_processes(server) == baseline, timeout=15,
                 what="release when the server-wide TTL ran out")
    finally:
        server.kill()


def test_a_client_that_disconnects_after_acceptance_does_not_cancel_the_turn(
    tmp_path: Path,
) -> None:
    """A client that hangs up after admission does not cancel the turn (concepts: Turns)."""
    slow = '[models.slow]\nprovider = "scripted"\nscript = [ { text = "done", delay_ms = 1500 } ]\n'
    server = configured(tmp_path, slow).start()
    try:
        sid = server.create_session(model="slow")["id"]
        body = json.dumps({"input": "hang up on me"}).encode()
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(
                f"POST /v1/sessions/{sid}/messages HTTP/1.1\r\nHost: {host}\r\n"
                f"Authorization: Bearer {server.token}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode() + body
            )
            wait_for(lambda: any(e["kind"] == "model_call_started" for e in server.events(sid)),
                     timeout=20, what="the turn to be admitted")
        # the connection is closed now, mid-turn; the turn still runs to its end
        wait_for(lambda: server.events(sid)[-1]["kind"] == "turn_ended", timeout=20,
                 what="the turn to end without its client")
        assert server.request("GET", f"/v1/sessions/{sid}/transcript").json()["messages"][-1][
            "content"
        ][0]["text"] == "done"
    finally:
        server.kill()


def test_a_text_turn_wakes_the_actor_only_for_the_model_call_and_the_end(
    server: BrainServer, tmp_path: Path
) -> None:
    """The default Agentloop's transcript.read and both transcript.sets are carried out on the
    activation's thread (brain/actors/session/inline.py): of the guest's work only model.call
    (which sends) and the activation's end reach the actor through the bridge."""
    sid = server.create_session()["id"]
    # Each release is reported REPORT_DELAY_SECS after it, unless the session opened again in
    # the meantime: waiting for each report keeps the count one per release.
    wait_for(lambda: released(tmp_path) == 1, timeout=10, what="the create's release")
    server.send(sid, "warm")
    wait_for(lambda: released(tmp_path) == 2, timeout=10,
             what="the first turn's release in the trace")
    before = len(trace_lines(tmp_path))
    answer = server.send(sid, "count the wake-ups")
    assert answer["status"] == "ended"
    wait_for(lambda: released(tmp_path) == 3, timeout=10,
             what="the second turn's release in the trace")
    turn = [line for line in trace_lines(tmp_path)[before:]
            if line.get("kind") == "session"]
    commits = [line for line in turn if line["dir"] == "commit"]
    wakes = [line for line in turn if line["dir"] == "recv" and line["msg"] == "WatchMessage"]
    kinds = [e["kind"] for e in server.events(sid)]
    assert kinds.count("turn_ended") == 2
    assert len(commits) == 6  # turn start, user message, model call, its end, answer, turn end
    assert len(wakes) == 2


def released(tmp_path: Path) -> int:
    """Release reports the session actor sent, as the trace has them so far."""
    return sum(line["msg"] == "Released" and line["dir"] == "send" and line["kind"] == "session"
               for line in trace_lines(tmp_path))
