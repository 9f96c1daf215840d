"""MCP servers as Tools through a real `brain serve` (docs/tools-and-environments.md, "mcp").

The MCP servers are tests/tools/mcp/mcp_server.py, written with the SDK's server side: one over
Streamable HTTP in a subprocess, one over stdio started by Brain's Tool executor. Their logs
count the calls each really received.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain.journal import JournalScan

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install '.[mcp]')")

from tests.support.mcp_servers import McpHttpServer, calls, log_lines, stdio_table
from tests.support.server import BrainServer, configured, free_port, group_pids
from tests.support.sse import SseClient
from tests.support.waiting import wait_for

SECRET = "mcp-secret-7f3a9c-never-on-disk"
MAX_TOOL_SECS = 4


def script_step(pattern: str, *tool_calls: tuple[str, dict]) -> str:
    calls_toml = ", ".join(
        f'{{ name = "{name}", input = {json.dumps(arguments).replace(":", " =")} }}'
        .replace('"a" =', "a =").replace('"b" =', "b =").replace('"seconds" =', "seconds =")
        .replace('"text" =', "text =")
        for name, arguments in tool_calls)
    return (f'  {{ when_last_user_matches = "{pattern}", tool_calls = [ {calls_toml} ] }},\n'
            f'  {{ when_last_user_matches = "{pattern}", text = "done" }},\n')


SCRIPT = "".join([
    script_step("^add", ("remote.add", {"a": 2, "b": 3})),
    script_step("^local", ("local.add", {"a": 4, "b": 5})),
    script_step("^broken", ("remote.broken", {})),
    script_step("^slow", ("remote.slow", {"seconds": 30})),
    script_step("^short", ("remote.slow", {"seconds": 3})),
    script_step("^whoami", ("remote.whoami", {})),
    script_step("^nap locally", ("local.slow", {"seconds": 3})),
    script_step("^four", *[("remote.add", {"a": i, "b": i}) for i in range(4)]),
])


def config(remote_url: str, stdio_log: Path) -> str:
    stdio = stdio_table(stdio_log)
    return f"""
[models.mcpuser]
provider = "scripted"
script = [
{SCRIPT}]

[mcp_servers.remote]
url = "{remote_url}"
tools = ["add", "broken", "slow", "whoami"]
timeout_s = 10

[mcp_servers.local]
command = {json.dumps(stdio["command"])}
args = {json.dumps(stdio["args"])}
env = {{ PYTHONPATH = {json.dumps(stdio["env"]["PYTHONPATH"])} }}

[mcp_servers.gone]
url = "http://127.0.0.1:{free_port()}/mcp"
timeout_s = 3
"""


class Setup:
    def __init__(self, server: BrainServer, remote: McpHttpServer, stdio_log: Path) -> None:
        self.server, self.remote, self.stdio_log = server, remote, stdio_log


def start(tmp_path: Path) -> Setup:
    remote = McpHttpServer(tmp_path / "remote.log").start()
    stdio_log = tmp_path / "stdio.log"
    server = configured(tmp_path, config(remote.url, stdio_log),
                        {"BRAIN_MAX_TOOL_SECS": str(MAX_TOOL_SECS),
                         "BRAIN_TRACE": str(tmp_path / "trace.jsonl")})
    try:
        server.start()
    except BaseException:
        remote.stop()
        raise
    return Setup(server, remote, stdio_log)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    made = start(tmp_path_factory.mktemp("mcp"))
    try:
        yield made
    finally:
        made.server.kill()
        made.remote.stop()


def journal(server: BrainServer, sid: str) -> list[dict]:
    return [frame.record for frame in JournalScan(server.data_dir / "sessions" / sid / "journal")]


def tool_records(server: BrainServer, sid: str) -> list[dict]:
    return [e for e in server.events(sid) if e["kind"].startswith("tool_call_")]


def test_a_tool_turn_over_streamable_http(setup: Setup) -> None:
    server = setup.server
    sid = server.create_session(model="mcpuser", mcp_servers=["remote"])["id"]
    created = journal(server, sid)[0]
    assert created["kind"] == "session_created"
    recorded = {t["name"]: t for t in created["config"]["tools"]}
    assert set(recorded) == {"remote.add", "remote.broken", "remote.slow", "remote.whoami"}
    assert recorded["remote.add"]["route"] == "mcp"
    assert recorded["remote.add"]["input_schema"]["required"] == ["a", "b"]
    result = server.send(sid, "add them")
    assert (result["status"], result["output"]) == ("ended", "done")
    started, ended = tool_records(server, sid)
    assert started["kind"] == "tool_call_started" and started["data"]["tool"] == "remote.add"
    assert ended["kind"] == "tool_call_ended" and ended["data"]["outcome"] == "ok"
    assert ended["data"]["result"]["content"]["structuredContent"] == {"result": 5}
    assert len(calls(setup.remote.log, "add")) == 1


def test_a_tool_turn_over_stdio(setup: Setup) -> None:
    server = setup.server
    sid = server.create_session(model="mcpuser", mcp_servers=["local"])["id"]
    assert server.send(sid, "local sum")["output"] == "done"
    ended = tool_records(server, sid)[-1]
    assert ended["data"]["outcome"] == "ok"
    assert ended["data"]["result"]["content"]["structuredContent"] == {"result": 9}
    assert len(calls(setup.stdio_log, "add")) == 1
    pid = calls(setup.stdio_log, "add")[0]["pid"]
    assert server.request("POST", f"/v1/sessions/{sid}/end").status_code == 200
    wait_for(lambda: not alive(pid), timeout=15, what="the session's stdio server stopping")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.slow_e2e  # a stop and the processes left: the OS, on any Python
def test_stopping_brain_stops_its_stdio_servers(tmp_path: Path) -> None:
    made = start(tmp_path)
    try:
        sid = made.server.create_session(model="mcpuser", mcp_servers=["local"])["id"]
        assert made.server.send(sid, "local sum")["output"] == "done"
        pid = calls(made.stdio_log, "add")[0]["pid"]
        assert alive(pid)
        assert made.server.stop() == []
        assert not alive(pid)
    finally:
        made.server.kill()
        made.remote.stop()


def test_a_stdio_server_killed_mid_call_is_unknown_with_exactly_one_call(setup: Setup) -> None:
    server = setup.server
    sid = server.create_session(model="mcpuser", mcp_servers=["local"])["id"]
    resp = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "nap locally"},
                          headers={"Prefer": "respond-async"})
    assert resp.status_code == 202, resp.text
    slow = wait_for(lambda: calls(setup.stdio_log, "slow"), timeout=20, what="the call")
    os.kill(slow[0]["pid"], signal.SIGKILL)
    wait_for(lambda: any(e["kind"] == "turn_ended" for e in server.events(sid)), timeout=20,
             what="the turn's end")
    failed = [e for e in tool_records(server, sid) if e["kind"] == "tool_call_failed"]
    assert [e["data"]["outcome"] for e in failed] == ["unknown"]
    assert len(calls(setup.stdio_log, "slow")) == 1
    # The next call starts the server again.
    assert server.send(sid, "local sum")["output"] == "done"
    assert tool_records(server, sid)[-1]["data"]["outcome"] == "ok"


def test_is_error_reaches_the_model_as_an_error_result(setup: Setup) -> None:
    server = setup.server
    sid = server.create_session(model="mcpuser", mcp_servers=["remote"])["id"]
    server.send(sid, "broken please")
    ended = tool_records(server, sid)[-1]
    assert ended["kind"] == "tool_call_ended" and ended["data"]["outcome"] == "ok"
    assert ended["data"]["result"]["is_error"] is True


def test_a_slow_tool_is_cut_at_the_deadline_and_the_server_sees_it(setup: Setup) -> None:
    server = setup.server
    sid = server.create_session(model="mcpuser", mcp_servers=["remote"])["id"]
    server.send(sid, "slow one")
    failed = tool_records(server, sid)[1]
    assert failed["kind"] == "tool_call_failed" and failed["data"]["outcome"] == "timeout"
    wait_for(lambda: any(e["event"] == "cancelled" for e in log_lines(setup.remote.log)),
             timeout=10, what="the server seeing the cancellation")


def test_progress_reaches_sse_subscribers_live_and_is_never_journaled(setup: Setup) -> None:
    server = setup.server
    sid = server.create_session(model="mcpuser", mcp_servers=["remote"])["id"]
    client = SseClient("127.0.0.1", server.port, f"/v1/sessions/{sid}/events", server.token)
    try:
        client.events(len(server.events(sid)))  # caught up
        resp = server.request("POST", f"/v1/sessions/{sid}/messages",
                              json={"input": "short nap"}, headers={"Prefer": "respond-async"})
        assert resp.status_code == 202, resp.text
        frames = []
        while not any(f.event == "turn_ended" for f in frames):
            frame = client.next_frame(timeout=30)
            assert frame is not None
            if not frame.comment:
                frames.append(frame)
    finally:
        client.close()
    progress = [json.loads(f.data) for f in frames if f.event == "tool_progress"]
    assert progress and all(f.id is None for f in frames if f.event == "tool_progress")
    started = next(json.loads(f.data) for f in frames if f.event == "tool_call_started")
    assert {p["started"] for p in progress} == {started["sequence"]}
    assert progress[0]["total"] == 30 and progress[0]["message"] == "step 0"
    kinds = {r["kind"] for r in journal(server, sid)}
    assert "tool_progress" not in kinds


def test_a_server_down_at_creation_fails_the_create_naming_it(setup: Setup) -> None:
    server = setup.server
    before = sorted((server.data_dir / "sessions").iterdir())
    resp = server.request("POST", "/v1/sessions", json={"mcp_servers": ["remote", "gone"]})
    assert resp.status_code == 502, resp.text
    error = resp.json()["error"]
    assert error["code"] == "mcp_server_unavailable" and "gone" in error["message"]
    assert sorted((server.data_dir / "sessions").iterdir()) == before


def test_bad_mcp_fields_are_refused_with_the_field_named(setup: Setup) -> None:
    server = setup.server
    for body, word in [({"mcp_servers": ["nope"]}, "mcp_servers"),
                       ({"mcp_servers": "remote"}, "mcp_servers"),
                       ({"mcp_servers": ["remote"], "mcp_credentials": {"local": {"env": {}}}},
                        "mcp_credentials.local"),
                       ({"mcp_servers": ["remote"],
                         "mcp_credentials": {"remote": {"env": {"A": "b"}}}},
                        "mcp_credentials.remote")]:
        resp = server.request("POST", "/v1/sessions", json=body)
        assert resp.status_code == 400, (body, resp.text)
        assert resp.json()["error"]["code"] == "invalid_request"
        assert word in resp.json()["error"]["message"]


def test_credentials_reach_the_server_and_nothing_on_disk_or_in_the_log(setup: Setup) -> None:
    server = setup.server
    sid = server.create_session(model="mcpuser", mcp_servers=["remote"],
                                mcp_credentials={"remote": {"bearer_token": SECRET}})["id"]
    server.send(sid, "whoami")
    ended = tool_records(server, sid)[-1]
    assert ended["data"]["result"]["content"]["content"][0]["text"] == "authorized"
    plain = server.create_session(model="mcpuser", mcp_servers=["remote"])["id"]
    server.send(plain, "whoami")
    assert tool_records(server, plain)[-1]["data"]["result"]["content"]["content"][0][
        "text"] == "anonymous"
    needle = SECRET.encode()
    trace = Path(server.extra_env["BRAIN_TRACE"])
    assert trace.stat().st_size > 0
    for path in [*server.data_dir.rglob("*"), server.log_path, trace]:
        if path.is_file():
            assert needle not in path.read_bytes(), f"the credential is in {path}"
    assert server.request("POST", f"/v1/sessions/{sid}/end").status_code == 200
    assert server.request("DELETE", f"/v1/sessions/{sid}").status_code == 204


@pytest.mark.slow_e2e
def test_200_concurrent_calls_across_50_sessions_over_one_http_server(setup: Setup) -> None:
    server = setup.server
    before = len(calls(setup.remote.log, "add"))
    sids = [server.create_session(model="mcpuser", mcp_servers=["remote"])["id"]
            for _ in range(50)]
    with concurrent.futures.ThreadPoolExecutor(50) as pool:
        results = list(pool.map(lambda sid: server.send(sid, "four at once"), sids))
    assert all(r["status"] == "ended" for r in results)
    for sid in sids:
        ended = [e for e in tool_records(server, sid) if e["kind"] == "tool_call_ended"]
        assert len(ended) == 4 and all(e["data"]["outcome"] == "ok" for e in ended)
    assert len(calls(setup.remote.log, "add")) - before == 200


@pytest.mark.slow_e2e  # a SIGKILL and a restart: the journals, on any Python
def test_sigkill_mid_call_gives_unknown_and_no_second_call_then_a_replay_without_the_server(
        tmp_path: Path) -> None:
    made = start(tmp_path)
    server, remote = made.server, made.remote
    try:
        sid = server.create_session(model="mcpuser", mcp_servers=["remote"])["id"]
        assert server.send(sid, "add first")["output"] == "done"
        resp = server.request("POST", f"/v1/sessions/{sid}/messages",
                              json={"input": "short nap"}, headers={"Prefer": "respond-async"})
        assert resp.status_code == 202, resp.text
        wait_for(lambda: calls(remote.log, "slow"), timeout=20, what="the call at the server")
        pgid = server.proc.pid
        server.kill()
        assert group_pids(pgid) == []
        server = BrainServer(server.data_dir, env=server.extra_env).start()
        wait_for(lambda: server.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle",
                 timeout=30, what="recovery by the start-up scan")
        failed = [e for e in tool_records(server, sid) if e["kind"] == "tool_call_failed"]
        assert [e["data"]["outcome"] for e in failed] == ["unknown"]
        # The server ran it to its end or saw the connection go (and cancelled it).
        wait_for(lambda: any(e["event"] in ("done", "cancelled") for e in log_lines(remote.log)),
                 timeout=10, what="the interrupted call settling at the server")
        assert len(calls(remote.log, "slow")) == 1  # never sent again
        # The first turn replays from the journal alone, with the server stopped.
        remote.stop()
        turns = [e for e in server.events(sid) if e["kind"] == "turn_started"]
        replay = server.request("POST", f"/v1/sessions/{sid}/replays",
                                json={"turn": turns[0]["sequence"]}, timeout=120)
        assert replay.status_code == 200, replay.text
        assert replay.json()["verdict"] == "match"
        assert len(calls(remote.log, "add")) == 1
    finally:
        server.kill()
        remote.stop()


def test_the_client_sdk_creates_with_mcp_servers_and_credentials(setup: Setup) -> None:
    """Both create fields pass through `create_session`, and a server that cannot list its
    tools is the SDK's McpServerUnavailable."""
    from brain.client import Brain, McpServerUnavailable

    server = setup.server
    with Brain(server.url, server.token, timeout=30, turn_timeout=60) as brain:
        session = brain.create_session(model="mcpuser", mcp_servers=["remote"],
                                       mcp_credentials={"remote": {"bearer_token": SECRET}})
        assert session.send("whoami").status == "ended"
        assert tool_records(server, session.id)[-1]["data"]["result"]["content"]["content"][0][
            "text"] == "authorized"
        with pytest.raises(McpServerUnavailable, match="gone"):
            brain.create_session(model="mcpuser", mcp_servers=["gone"])
