"""Over real HTTP: media type and size refusals, create bodies with nulls and bad seeds, session
tokens across deletion, the generated operator token, a configuration refused at start, and a
damaged session beside healthy ones: refused for every write, readable as damaged, deletable."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from brain.journal import JournalScan, load_checkpoint
from brain.journal.frames import FRAME_HEADER_SIZE
from brain.journal.writer import CHECKPOINT_RECORDS
from brain.operator_token import TOKEN_FILE
from brain.web.bodies import MESSAGE_BODY_LIMIT
from tests.support.damage import damage_first_record
from tests.support.server import BrainServer, wait_for_no_open_session_actor

SERVE_REFUSAL_TIMEOUT_SECS = 20.0
SSE_TIMEOUT_SECS = 10.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    """One server for the checks that leave nothing behind that others could trip on."""
    s = BrainServer(tmp_path_factory.mktemp("refusals") / "data").start()
    try:
        yield s
    finally:
        s.kill()


def error_code(resp: requests.Response) -> tuple[int, str]:
    return resp.status_code, resp.json()["error"]["code"]


# -- refusals of the body itself ---------------------------------------------------------------


def test_a_body_that_is_not_json_is_415(server: BrainServer) -> None:
    sid = server.create_session()["id"]
    for path, body in (("/v1/sessions", b"{}"), (f"/v1/sessions/{sid}/messages", b"input=hi")):
        resp = server.request("POST", path, data=body,
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert error_code(resp) == (415, "unsupported_media_type"), resp.text
        assert resp.headers["Content-Type"].startswith("application/json")
    assert [e["kind"] for e in server.events(sid)] == ["session_created"]  # nothing ran


def test_a_method_the_route_does_not_have_is_405_with_allow(server: BrainServer) -> None:
    sid = server.create_session()["id"]
    resp = server.request("PUT", f"/v1/sessions/{sid}", json={})
    assert error_code(resp) == (405, "invalid_request")
    assert set(resp.headers["Allow"].replace(" ", "").split(",")) >= {"GET", "DELETE"}


def test_a_body_over_the_limit_is_413(server: BrainServer) -> None:
    sid = server.create_session()["id"]
    filler = "x" * (MESSAGE_BODY_LIMIT - len('{"input": ""}') + 1)
    body = f'{{"input": "{filler}"}}'.encode()
    assert len(body) == MESSAGE_BODY_LIMIT + 1
    resp = server.request("POST", f"/v1/sessions/{sid}/messages", data=body,
                          headers={"Content-Type": "application/json"})
    assert error_code(resp) == (413, "payload_too_large"), resp.text
    assert [e["kind"] for e in server.events(sid)] == ["session_created"]
    at_the_limit = body[:-3] + b'"}'
    assert len(at_the_limit) == MESSAGE_BODY_LIMIT
    resp = server.request("POST", f"/v1/sessions/{sid}/messages", data=at_the_limit,
                          headers={"Content-Type": "application/json"})
    assert resp.status_code == 200, resp.text


# -- create bodies -----------------------------------------------------------------------------


def test_null_optional_create_fields_mean_absent(server: BrainServer) -> None:
    body = dict.fromkeys(("agentloop", "model", "tools", "environments", "transcript",
                          "idle_ttl_ms", "metadata"))
    created = server.create_session(**body)
    config = created["config"]
    assert (config["agentloop"]["name"], config["model"]["name"]) == ("default", "scripted")
    assert (config["tools"], config["environments"], config["idle_ttl_ms"],
            config["metadata"]) == ([], [], None, {})
    transcript = server.request("GET", f"/v1/sessions/{created['id']}/transcript").json()
    assert transcript["messages"] == []


def test_a_seed_transcript_item_that_is_not_a_message_is_400(server: BrainServer) -> None:
    before = server.request("GET", "/v1/sessions").json()["sessions"]
    seed = [{"role": "user", "content": "hi"}, {"role": "user", "content": 42}]
    resp = server.request("POST", "/v1/sessions", json={"transcript": seed})
    assert error_code(resp) == (400, "invalid_request"), resp.text
    assert "transcript[1]" in resp.json()["error"]["message"]
    assert server.request("GET", "/v1/sessions").json()["sessions"] == before
    good = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]
    sid = server.create_session(transcript=good)["id"]
    assert server.request("GET", f"/v1/sessions/{sid}/transcript").json()["messages"] == good


# -- tokens ------------------------------------------------------------------------------------


def test_a_session_token_serves_its_session_only_and_dies_with_it(server: BrainServer) -> None:
    mine, other = server.create_session()["id"], server.create_session()["id"]
    token = server.request("POST", f"/v1/sessions/{mine}/tokens").json()["token"]
    sent = server.request("POST", f"/v1/sessions/{mine}/messages", token=token,
                          json={"input": "hi"})
    assert sent.status_code == 200 and sent.json()["status"] == "ended"
    assert server.request("GET", f"/v1/sessions/{mine}/events", token=token).status_code == 200
    # Another session is hidden, not forbidden: a session token cannot learn which ids exist
    # (docs/http-api.md, Authentication). Routes about no one session are 403.
    assert error_code(server.request("GET", f"/v1/sessions/{other}", token=token)) == (
        404, "not_found")
    assert error_code(server.request("POST", f"/v1/sessions/{other}/messages", token=token,
                                     json={"input": "hi"})) == (404, "not_found")
    assert error_code(server.request("GET", "/v1/sessions", token=token)) == (403, "forbidden")
    assert server.request("POST", f"/v1/sessions/{mine}/end").status_code == 200
    assert server.request("DELETE", f"/v1/sessions/{mine}", token=token).status_code == 204
    for method, path in (("GET", f"/v1/sessions/{mine}"), ("GET", f"/v1/sessions/{other}"),
                         ("GET", "/v1/sessions")):
        resp = server.request(method, path, token=token)
        assert error_code(resp) == (401, "unauthorized"), (path, resp.text)
        assert resp.headers["WWW-Authenticate"] == "Bearer"


def test_without_brain_api_token_a_private_token_file_is_generated(tmp_path: Path) -> None:
    s = BrainServer(tmp_path / "data", env={"BRAIN_API_TOKEN": ""}).start()
    try:
        path = s.data_dir / TOKEN_FILE
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        token = path.read_text().strip()
        assert token and token != s.token
        assert s.request("GET", "/v1/sessions", token=token).status_code == 200
        assert error_code(s.request("GET", "/v1/sessions")) == (401, "unauthorized")
        assert s.request("POST", "/v1/sessions", token=token, json={}).status_code == 201
    finally:
        s.kill()


# -- configuration refused at start ------------------------------------------------------------


def test_serve_refuses_a_tool_that_names_no_builtin(tmp_path: Path) -> None:
    config = tmp_path / "brain.toml"
    config.write_text('[tools.broken]\nroute = "builtin"\nfunction = "does_not_exist"\n')
    env = BrainServer(tmp_path / "data", env={"BRAIN_CONFIG": str(config)}).env()
    serve = subprocess.Popen([sys.executable, "-m", "brain.cli", "serve"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        _, stderr = serve.communicate(timeout=SERVE_REFUSAL_TIMEOUT_SECS)
    finally:
        if serve.poll() is None:  # it started instead of refusing: stop all it started
            os.killpg(serve.pid, signal.SIGKILL)
            serve.communicate(timeout=SERVE_REFUSAL_TIMEOUT_SECS)
    assert serve.returncode == 2
    assert b"tools.broken: no builtin function 'does_not_exist'" in stderr
    assert b"Traceback" not in stderr  # an operator's mistake is a message, not a crash
    assert not (tmp_path / "data").exists()  # refused before anything was started


# -- a damaged session -------------------------------------------------------------------------


@pytest.mark.slow_e2e  # a damaged journal on disk, the same on any Python
def test_a_damaged_session_is_refused_alone(tmp_path: Path) -> None:
    s = BrainServer(tmp_path / "data").start()
    try:
        damaged, healthy = s.create_session()["id"], s.create_session()["id"]
        s.send(damaged, "before the damage")
        s.send(healthy, "before the damage")
        s.kill()  # between restarts, so no actor holds the journal open meanwhile
        damage_first_record(s.data_dir / "sessions" / damaged)
        s.start()
        _check_damaged(s, damaged)
        _check_healthy(s, healthy, damaged)
        assert s.request("DELETE", f"/v1/sessions/{damaged}").status_code == 204
        assert error_code(s.request("GET", f"/v1/sessions/{damaged}")) == (404, "not_found")
        assert s.send(healthy, "after the delete")["status"] == "ended"
        log = s.log_path.read_text(errors="replace")
        # Damage is reported (a log line naming the file), never an unhandled exception.
        assert "CorruptJournal" not in log, log[-5000:]
    finally:
        s.kill()


def _check_damaged(s: BrainServer, sid: str) -> None:
    view = s.request("GET", f"/v1/sessions/{sid}")
    assert view.status_code == 200 and view.json()["status"] == "damaged"
    for path in (f"/v1/sessions/{sid}/events", f"/v1/sessions/{sid}/transcript"):
        assert error_code(s.request("GET", path)) == (500, "session_damaged"), path
    stream = s.request("GET", f"/v1/sessions/{sid}/events", timeout=SSE_TIMEOUT_SECS,
                       headers={"Accept": "text/event-stream"})
    assert error_code(stream) == (500, "session_damaged"), stream.text
    assert stream.headers["Content-Type"].startswith("application/json")
    sent = s.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "after"})
    assert error_code(sent) == (500, "session_damaged"), sent.text


def _check_healthy(s: BrainServer, sid: str, damaged: str) -> None:
    assert s.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle"
    assert s.send(sid, "after the damage")["status"] == "ended"
    assert [e["kind"] for e in s.events(sid)][-1] == "turn_ended"
    listed = {x["id"]: x["status"] for x in s.request("GET", "/v1/sessions").json()["sessions"]}
    assert listed == {sid: "idle", damaged: "damaged"}


def turns_past_checkpoint(s: BrainServer, sid: str, session_dir: Path) -> None:
    """Turns until a checkpoint covers a whole turn and another turn follows it (a checkpoint
    is written once CHECKPOINT_RECORDS records have been committed since the last one)."""
    for turn in range(3 * CHECKPOINT_RECORDS):
        assert s.send(sid, f"turn {turn}")["status"] == "ended"
        cp, _why = load_checkpoint(session_dir / "checkpoint")
        if turn >= 2 and cp is not None and cp.seq < s.events(sid)[-1]["sequence"] \
                and any(e["kind"] == "turn_started" and e["sequence"] < cp.seq
                        for e in s.events(sid)):
            return
    raise AssertionError("no checkpoint covering a turn was written")


def covered_frame(session_dir: Path) -> tuple[Path, int]:
    """(segment, offset) of the first turn's `turn_started`: a complete frame that the
    checkpoint covers, with later turns after it."""
    cp, why = load_checkpoint(session_dir / "checkpoint")
    assert cp is not None, why
    for frame in JournalScan(session_dir / "journal"):
        if frame.record["kind"] == "turn_started":
            assert frame.seq < cp.seq
            return session_dir / "journal" / f"{frame.segment:020d}.seg", frame.offset
    raise AssertionError("no turn in the journal")


def journal_bytes(session_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((session_dir / "journal").iterdir())}


@pytest.mark.slow_e2e  # a damaged journal on disk, the same on any Python
def test_a_flip_under_the_checkpoint_refuses_every_write_and_delete_removes_it(
    tmp_path: Path,
) -> None:
    s = BrainServer(tmp_path / "data").start()
    try:
        damaged = s.create_session(environments=["local"])["id"]
        healthy = s.create_session()["id"]
        session_dir = s.data_dir / "sessions" / damaged
        turns_past_checkpoint(s, damaged, session_dir)
        environment = s.data_dir / "environments" / damaged / "local"
        assert environment.is_dir()
        wait_for_no_open_session_actor(s)
        segment, offset = covered_frame(session_dir)
        data = bytearray(segment.read_bytes())
        data[offset + FRAME_HEADER_SIZE + 2] ^= 0x04  # one bit, inside the payload
        segment.write_bytes(bytes(data))
        before = journal_bytes(session_dir)

        sent = s.request("POST", f"/v1/sessions/{damaged}/messages", json={"input": "after"})
        assert error_code(sent) == (500, "session_damaged"), sent.text
        message = sent.json()["error"]["message"]
        assert f"sessions/{damaged}/journal/{segment.name} at byte offset {offset}" in message
        assert journal_bytes(session_dir) == before
        log = s.log_path.read_text(errors="replace")
        where = f"sessions/{damaged}/journal/{segment.name} at byte offset {offset}"
        assert where in log, log[-3000:]

        submitted = s.request("POST", f"/v1/sessions/{damaged}/messages", json={"input": "x"},
                              headers={"Prefer": "respond-async"})
        assert error_code(submitted) == (500, "session_damaged"), submitted.text
        ended = s.request("POST", f"/v1/sessions/{damaged}/end")
        assert error_code(ended) == (500, "session_damaged"), ended.text
        assert f"byte offset {offset}" in ended.json()["error"]["message"]
        cancelled = s.request("POST", f"/v1/sessions/{damaged}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["sequence"] is None
        _check_damaged(s, damaged)  # reads say damaged; one more send is refused
        _check_healthy(s, healthy, damaged)
        assert journal_bytes(session_dir) == before  # nothing was ever appended

        assert s.request("DELETE", f"/v1/sessions/{damaged}").status_code == 204
        assert error_code(s.request("GET", f"/v1/sessions/{damaged}")) == (404, "not_found")
        assert not session_dir.exists() and not environment.exists()
        assert s.send(healthy, "after the delete")["status"] == "ended"
    finally:
        s.kill()


@pytest.mark.slow_e2e  # a damaged journal on disk, the same on any Python
def test_a_session_kept_open_takes_no_write_once_its_journal_is_damaged(tmp_path: Path) -> None:
    """With an idle TTL the session actor keeps its writer open between turns; damage made
    meanwhile is found before the next command writes, as an open would find it."""
    s = BrainServer(tmp_path / "data", env={"BRAIN_SESSION_IDLE_TTL_MS": "0"}).start()
    try:
        sid = s.create_session()["id"]
        session_dir = s.data_dir / "sessions" / sid
        turns_past_checkpoint(s, sid, session_dir)
        segment, offset = covered_frame(session_dir)
        data = bytearray(segment.read_bytes())
        data[offset + FRAME_HEADER_SIZE + 1] ^= 0x01
        segment.write_bytes(bytes(data))
        before = journal_bytes(session_dir)
        sent = s.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "after"})
        assert error_code(sent) == (500, "session_damaged"), sent.text
        assert f"{segment.name} at byte offset {offset}" in sent.json()["error"]["message"]
        assert journal_bytes(session_dir) == before
        assert s.request("GET", f"/v1/sessions/{sid}").json()["status"] == "damaged"
        assert s.request("DELETE", f"/v1/sessions/{sid}").status_code == 204
        assert error_code(s.request("GET", f"/v1/sessions/{sid}")) == (404, "not_found")
    finally:
        s.kill()
