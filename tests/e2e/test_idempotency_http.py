"""Idempotency-Key over HTTP, across SIGKILL and restart (docs/idempotency.md)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import requests

from tests.support.server import BrainServer
from tests.support.waiting import wait_for


def unanswered_claims(data: Path, key: str) -> int:
    db = data / "idempotency.sqlite3"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT count(*) FROM claims WHERE key = ? AND status IS NULL",
                                (key,)).fetchone()[0]
    except sqlite3.OperationalError:
        return 0  # the store is being created or checkpointed right now: ask again


def post(server: BrainServer, path: str, key: str, body: dict | None = None,
         headers: dict | None = None) -> requests.Response:
    return server.request("POST", path, json=body if body is not None else {},
                          headers={"Idempotency-Key": key, **(headers or {})})


@pytest.mark.slow_e2e  # a SIGKILL and a restart: what it checks is on disk, on any Python
def test_create_and_send_replay_byte_for_byte_after_sigkill(tmp_path: Path) -> None:
    server = BrainServer(tmp_path / "data").start()
    try:
        first_create = post(server, "/v1/sessions", "create-1", {"metadata": {"n": 1}})
        assert first_create.status_code == 201
        sid = first_create.json()["id"]
        first_send = post(server, f"/v1/sessions/{sid}/messages", "send-1", {"input": "hello"})
        assert first_send.status_code == 200
        server.kill()
        server = BrainServer(tmp_path / "data").start()
        again_create = post(server, "/v1/sessions", "create-1", {"metadata": {"n": 1}})
        again_send = post(server, f"/v1/sessions/{sid}/messages", "send-1", {"input": "hello"})
        for first, again in ((first_create, again_create), (first_send, again_send)):
            assert again.status_code == first.status_code
            assert again.content == first.content
            assert again.headers["Content-Type"] == first.headers["Content-Type"]
        assert again_create.headers["Location"] == first_create.headers["Location"]
        listed = server.request("GET", "/v1/sessions").json()["sessions"]
        assert [s["id"] for s in listed] == [sid]  # the create ran once
        kinds = [e["kind"] for e in server.events(sid)]
        assert kinds.count("turn_started") == 1  # the send ran once
    finally:
        server.kill()


def test_scopes_conflicts_and_errors(brain_server: BrainServer) -> None:
    s = brain_server
    sid = s.create_session()["id"]
    path = f"/v1/sessions/{sid}/messages"
    send = post(s, path, "same-key", {"input": "one"})
    submit = post(s, path, "same-key", {"input": "one"}, headers={"Prefer": "respond-async"})
    assert (send.status_code, submit.status_code) == (200, 202)  # separate scopes
    conflict = post(s, path, "same-key", {"input": "two"})
    assert (conflict.status_code, conflict.json()["error"]["code"]) == (409,
                                                                       "idempotency_conflict")
    bad_key = post(s, path, "", {"input": "x"})
    assert bad_key.status_code == 400
    assert post(s, path, "k\u00e9y", {"input": "x"}).status_code == 400
    # An error answer is stored and replayed like any other.
    missing = post(s, "/v1/sessions/nope/end", "end-1")
    assert missing.status_code == 404
    assert post(s, "/v1/sessions/nope/end", "end-1").content == missing.content


@pytest.mark.slow_e2e  # a SIGKILL and a restart: what it checks is on disk, on any Python
def test_in_progress_then_ambiguous_after_kill_between_claim_and_answer(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = BrainServer(data).start()
    sid = server.create_session()["id"]
    server.kill()
    server = BrainServer(data, env={"BRAIN_TEST_PAUSE_AFTER_CLAIM_SECS": "30"}).start()
    answers: list[requests.Response | Exception] = []

    def first_request() -> None:
        try:
            answers.append(post(server, f"/v1/sessions/{sid}/messages", "k1", {"input": "hi"}))
        except requests.RequestException as exc:
            answers.append(exc)

    thread = threading.Thread(target=first_request)
    thread.start()
    try:
        # The claim is durable before the work starts: wait until it is on disk.
        wait_for(lambda: unanswered_claims(data, "k1") == 1, timeout=20, what="durable claim")
        again = post(server, f"/v1/sessions/{sid}/messages", "k1", {"input": "hi"})
        assert (again.status_code, again.json()["error"]["code"]) == (409, "request_in_progress")
        server.kill()  # between the durable claim and the answer
        thread.join(timeout=30)
        assert answers and isinstance(answers[0], Exception)
        server = BrainServer(data).start()
        ambiguous = post(server, f"/v1/sessions/{sid}/messages", "k1", {"input": "hi"})
        assert (ambiguous.status_code, ambiguous.json()["error"]["code"]) == (
            409, "idempotency_ambiguous")
        kinds = [e["kind"] for e in server.events(sid)]
        assert "turn_started" not in kinds  # never executed, then or now
        assert post(server, f"/v1/sessions/{sid}/messages", "k2", {"input": "hi"}).ok
    finally:
        server.kill()


@pytest.mark.slow_e2e  # a SIGKILL and a restart: what it checks is on disk, on any Python
def test_every_scope_replays_after_sigkill(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = BrainServer(data).start()
    try:
        sid = server.create_session()["id"]
        other = server.create_session()["id"]
        calls = [
            ("POST", "/v1/sessions", "k-create", {"json": {}}),
            ("POST", f"/v1/sessions/{sid}/messages", "k-submit",
             {"json": {"input": "a"}, "headers": {"Prefer": "respond-async"}}),
        ]
        first = [server.request(m, p, **{**kw, "headers": {**kw.get("headers", {}),
                                                          "Idempotency-Key": key}})
                 for m, p, key, kw in calls]
        wait_for(lambda: server.request("GET", f"/v1/sessions/{sid}").json()["status"]
                 == "idle", what="submitted turn done")
        later = [
            ("POST", f"/v1/sessions/{sid}/cancel", "k-cancel", {}),
            ("POST", f"/v1/sessions/{other}/end", "k-end", {}),
            ("DELETE", f"/v1/sessions/{other}", "k-delete", {}),
        ]
        first += [server.request(m, p, headers={"Idempotency-Key": key}) for m, p, key, _ in later]
        assert [r.status_code for r in first] == [201, 202, 200, 200, 204]
        server.kill()
        server = BrainServer(data).start()
        again = [server.request(m, p, **{**kw, "headers": {**kw.get("headers", {}),
                                                          "Idempotency-Key": key}})
                 for m, p, key, kw in calls + later]
        assert [(r.status_code, r.content) for r in again] == [
            (r.status_code, r.content) for r in first]
        assert [e["kind"] for e in server.events(sid)].count("turn_started") == 1
        assert server.request("GET", f"/v1/sessions/{other}").status_code == 404
    finally:
        server.kill()
