"""POST /v1/sessions/{id}/forks on a real server: a new session from the parent's state at a
sequence, with its own journal, never touching the parent's."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.damage import damage_first_record
from tests.support.guests import example_guest
from tests.support.server import BrainServer, configured, wait_for_no_open_session_actor

SLOW_MODEL_SECS = 3.0
WAIT_SECS = 30.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    tmp_path = tmp_path_factory.mktemp("forks")
    script = tmp_path / "script.wasm"
    shutil.copy(example_guest("host_script"), script)
    s = configured(tmp_path, f"""
[agentloops.script]
path = "{script}"

[models.slow]
provider = "scripted"
script = [ {{ text = "slowly", delay_ms = {int(SLOW_MODEL_SECS * 1000)} }} ]
""", {"BRAIN_MAX_TURN_SECS": "30"})
    try:
        yield s.start()
    finally:
        s.kill()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def run(s: BrainServer, session_id: str, *ops: dict[str, Any]) -> dict[str, Any]:
    """One turn of the host_script Agentloop: each op sent in order, their results out."""
    result = s.send(session_id, json.dumps(list(ops)))
    assert result["status"] == "ended", result
    return result


def fork(s: BrainServer, session_id: str, body: Any, key: str | None = None) -> Any:
    headers = {"Idempotency-Key": key} if key else {}
    return s.request("POST", f"/v1/sessions/{session_id}/forks", json=body, headers=headers)


def two_turns(s: BrainServer, **create: Any) -> tuple[str, int]:
    """A parent that ran two turns; returns its id and the sequence turn 1 ended at."""
    parent = s.create_session(agentloop="script", **create)["id"]
    run(s, parent, {"op": "transcript.set", "messages": [user("one")]},
        {"op": "kv.put", "key": "turns", "value": 1}, {"op": "kv.put", "key": "kept", "value": "x"})
    first_end = s.request("GET", f"/v1/sessions/{parent}").json()["last_sequence"]
    run(s, parent, {"op": "transcript.set", "messages": [user("one"), user("two")]},
        {"op": "kv.put", "key": "turns", "value": 2}, {"op": "kv.delete", "key": "kept"})
    return parent, first_end


def journal_bytes(s: BrainServer, session_id: str) -> dict[str, bytes]:
    journal = s.data_dir / "sessions" / session_id / "journal"
    return {p.name: p.read_bytes() for p in sorted(journal.iterdir())}


def test_a_fork_after_turn_one_starts_from_that_state_and_goes_its_own_way(
        server: BrainServer) -> None:
    s = server
    parent, first_end = two_turns(s, metadata={"team": "forks"})
    parent_view = s.request("GET", f"/v1/sessions/{parent}").json()
    before = journal_bytes(s, parent)

    resp = fork(s, parent, {"at_sequence": first_end})
    assert resp.status_code == 201, resp.text
    child = resp.json()
    assert resp.headers["Location"] == f"/v1/sessions/{child['id']}"
    assert child["id"] != parent and child["status"] == "idle"
    assert child["config"] == parent_view["config"]  # the same configuration, metadata included

    events = s.events(child["id"])
    assert [e["kind"] for e in events[:2]] == ["forked_from", "session_created"]
    assert events[0]["sequence"] == 1
    assert events[0]["data"] == {"session_id": parent, "sequence": first_end}

    transcript = s.request("GET", f"/v1/sessions/{child['id']}/transcript").json()
    assert transcript["messages"] == [user("one")]
    # kv as it stood after turn 1: "turns" was 1 and "kept" not yet deleted.
    result = run(s, child["id"], {"op": "kv.read", "key": "turns"},
                 {"op": "kv.read", "key": "kept"}, {"op": "transcript.read"},
                 {"op": "kv.put", "key": "turns", "value": 20})
    read_turns, read_kept, read_transcript, _ = result["output"]
    assert read_turns == {"found": True, "value": 1}
    assert read_kept == {"found": True, "value": "x"}
    assert read_transcript["messages"] == [user("one")]

    # The parent is untouched: same journal bytes, same transcript, its kv where turn 2 left it.
    assert journal_bytes(s, parent) == before
    assert s.request("GET", f"/v1/sessions/{parent}/transcript").json()["messages"] == [
        user("one"), user("two")]
    out = run(s, parent, {"op": "kv.read", "key": "turns"}, {"op": "kv.read", "key": "kept"})
    assert [r["found"] for r in out["output"]] == [True, False]
    assert out["output"][0]["value"] == 2


def test_refusals_name_what_is_wrong(server: BrainServer) -> None:
    s = server
    parent, first_end = two_turns(s)
    last = s.request("GET", f"/v1/sessions/{parent}").json()["last_sequence"]
    turn_two = next(e["sequence"] for e in s.events(parent, after=first_end)
                    if e["kind"] == "turn_started")
    for inside in (turn_two, turn_two + 1, last - 1):
        resp = fork(s, parent, {"at_sequence": inside})
        assert (resp.status_code, resp.json()["error"]["code"]) == (409, "fork_inside_turn")
        assert f"turn that started at {turn_two}" in resp.json()["error"]["message"]
    beyond = fork(s, parent, {"at_sequence": last + 1})
    assert (beyond.status_code, beyond.json()["error"]["code"]) == (422, "sequence_beyond_end")
    assert str(last) in beyond.json()["error"]["message"]
    unknown = fork(s, "0" * 32, {"at_sequence": 1})
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    for bad in ({}, {"at_sequence": 0}, {"at_sequence": "3"}, {"at_sequence": 2, "x": 1}):
        resp = fork(s, parent, bad)
        assert (resp.status_code, resp.json()["error"]["code"]) == (400, "invalid_request"), bad
    # Nothing was created by any refusal: the parent is the only new session since.
    listed = s.request("GET", "/v1/sessions").json()["sessions"]
    assert not [x for x in listed if x["id"] > parent]
    # A session token may not fork: forking creates a session.
    token = s.request("POST", f"/v1/sessions/{parent}/tokens").json()["token"]
    resp = s.request("POST", f"/v1/sessions/{parent}/forks", token=token,
                     json={"at_sequence": first_end})
    assert resp.status_code == 403


def test_forking_a_busy_parent_at_an_earlier_record(server: BrainServer) -> None:
    s = server
    parent, first_end = two_turns(s, model="slow")
    resp = s.request("POST", f"/v1/sessions/{parent}/messages",
                     json={"input": json.dumps([{"op": "model.call", "messages": [user("q")]}])},
                     headers={"Prefer": "respond-async"})
    assert resp.status_code == 202, resp.text
    running = resp.json()["sequence"]
    inside = fork(s, parent, {"at_sequence": running})
    assert (inside.status_code, inside.json()["error"]["code"]) == (409, "fork_inside_turn")
    started = time.monotonic()
    resp = fork(s, parent, {"at_sequence": first_end})
    assert resp.status_code == 201, resp.text
    assert time.monotonic() - started < SLOW_MODEL_SECS  # it did not wait for the parent's turn
    assert s.request("GET", f"/v1/sessions/{parent}").json()["status"] == "running"
    child = resp.json()["id"]
    assert s.request("GET", f"/v1/sessions/{child}/transcript").json()["messages"] == [
        user("one")]
    deadline = time.monotonic() + WAIT_SECS
    while s.request("GET", f"/v1/sessions/{parent}").json()["status"] == "running":
        assert time.monotonic() < deadline, "the parent's turn never ended"
        time.sleep(0.1)


def test_the_same_key_gives_the_same_child_and_another_body_is_refused(
        server: BrainServer) -> None:
    s = server
    parent, first_end = two_turns(s)
    first = fork(s, parent, {"at_sequence": first_end}, key="fork-1")
    again = fork(s, parent, {"at_sequence": first_end}, key="fork-1")
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"]
    assert again.content == first.content
    other = fork(s, parent, {"at_sequence": first_end - 1}, key="fork-1")
    assert (other.status_code, other.json()["error"]["code"]) == (409, "idempotency_conflict")
    listed = [x["id"] for x in s.request("GET", "/v1/sessions").json()["sessions"]
              if x["id"] > parent]
    assert listed == [first.json()["id"]]


def test_a_fork_outlives_its_deleted_parent(server: BrainServer) -> None:
    s = server
    parent, first_end = two_turns(s)
    child = fork(s, parent, {"at_sequence": first_end}).json()["id"]
    grandchild = fork(s, child, {"at_sequence": s.events(child)[-1]["sequence"]})
    assert grandchild.status_code == 201, grandchild.text
    ended = s.request("POST", f"/v1/sessions/{parent}/end").json()
    assert ended["status"] == "ended"
    of_ended = fork(s, parent, {"at_sequence": ended["last_sequence"]})  # an ended one forks too
    assert of_ended.status_code == 201 and of_ended.json()["status"] == "idle", of_ended.text
    assert s.request("DELETE", f"/v1/sessions/{parent}").status_code == 204
    assert not (s.data_dir / "sessions" / parent).exists()
    assert fork(s, parent, {"at_sequence": first_end}).status_code == 404

    assert s.request("GET", f"/v1/sessions/{child}").json()["status"] == "idle"
    assert s.request("GET", f"/v1/sessions/{child}/transcript").json()["messages"] == [
        user("one")]
    out = run(s, child, {"op": "kv.read", "key": "turns"},
              {"op": "transcript.set", "messages": [user("one"), user("child")]})
    assert out["output"][0] == {"found": True, "value": 1}
    assert s.request("GET", f"/v1/sessions/{child}/transcript").json()["messages"] == [
        user("one"), user("child")]
    grand = grandchild.json()["id"]
    assert s.events(grand)[0]["data"]["session_id"] == child
    assert s.request("GET", f"/v1/sessions/{grand}/transcript").json()["messages"] == [
        user("one")]


def test_a_damaged_parent_is_refused_and_nothing_is_created(server: BrainServer) -> None:
    s = server
    parent, first_end = two_turns(s)
    wait_for_no_open_session_actor(s)
    damage_first_record(s.data_dir / "sessions" / parent)
    resp = fork(s, parent, {"at_sequence": first_end})
    assert (resp.status_code, resp.json()["error"]["code"]) == (500, "session_damaged")
    assert f"sessions/{parent}/journal/" in resp.json()["error"]["message"]
    listed = s.request("GET", "/v1/sessions").json()["sessions"]
    assert not [x for x in listed if x["id"] > parent]


def test_a_fork_sets_up_its_environments_anew(tmp_path: Path) -> None:
    s = BrainServer(tmp_path / "data").start()
    try:
        parent = s.create_session(environments=["local"])["id"]
        deadline = time.monotonic() + WAIT_SECS
        while s.request("GET", f"/v1/sessions/{parent}").json()["status"] != "idle":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        last = s.request("GET", f"/v1/sessions/{parent}").json()["last_sequence"]
        resp = fork(s, parent, {"at_sequence": last})
        assert resp.status_code == 201, resp.text
        child = resp.json()["id"]
        ops = [e for e in s.events(child) if e["kind"] == "environment_op_started"]
        assert [(e["data"]["environment"], e["data"]["op"]) for e in ops] == [("local", "setup")]
        assert (s.data_dir / "environments" / child / "local").is_dir()
    finally:
        s.kill()
