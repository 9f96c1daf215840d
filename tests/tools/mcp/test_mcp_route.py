"""The mcp route below the actors: listing and fenced calls against real MCP servers.

Each server is tests/tools/mcp/mcp_server.py, written with the SDK's server side and run as a
real process: over Streamable HTTP in a subprocess here, over stdio as a child Brain starts.
Its log says how many times each tool ran, whatever the client saw.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brain.environments.deadline import Deadline
from brain.tools.mcp.call import call_mcp_tool
from brain.tools.mcp.create import ServerDown, tool_entries
from brain.tools.mcp.credentials import Credentials
from brain.tools.mcp.hub import Hub
from brain.tools.mcp.listing import list_servers
from tests.support.mcp_servers import McpHttpServer, calls, log_lines, stdio_table
from tests.support.server import free_port


@pytest.fixture
def hub() -> Iterator[Hub]:
    hub = Hub()
    try:
        yield hub
    finally:
        hub.close()


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[McpHttpServer]:
    server = McpHttpServer(tmp_path / "http.log").start()
    try:
        yield server
    finally:
        server.stop()


def entry(spec: dict[str, Any], tool: str, **extra: Any) -> dict[str, Any]:
    return {"name": f"{spec['name']}.{tool}", "route": "mcp", "tool": tool, "server": spec,
            **extra}


def call(hub: Hub, spec: dict[str, Any], tool: str, arguments: Any, *, seconds: float = 20,
         session: str = "s1", cancel: threading.Event | None = None,
         held: Credentials | None = None, **extra: Any) -> Any:
    return call_mcp_tool(hub, entry(spec, tool, **extra), arguments, session_id=session,
                         sequence=7, credentials=held,
                         until=Deadline(time.time() + seconds),
                         cancel=cancel or threading.Event())


@pytest.fixture(params=["http", "stdio"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    if request.param == "stdio":
        yield {"name": "local", **stdio_table(tmp_path / "stdio.log")}
        return
    server = McpHttpServer(tmp_path / "http.log").start()
    try:
        yield {"name": "remote", "url": server.url, "_log": str(server.log), "_server": server}
    finally:
        server.stop()


def log_of(spec: dict[str, Any]) -> Path:
    return Path(spec["_log"]) if "_log" in spec else Path(spec["args"][-1])


def clean(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if not k.startswith("_")}


def test_listing_becomes_namespaced_entries_narrowed_by_the_allow_list(hub, spec):
    server = clean(spec)
    listings = list_servers(hub, {server["name"]: server}, "s1", {})
    names = {tool["name"] for tool in listings[server["name"]]}
    assert {"add", "echo", "slow", "broken", "whoami", "hidden"} <= names
    narrowed = {**server, "tools": ["add", "slow"]}
    entries = tool_entries({server["name"]: narrowed}, {}, listings, {"echo"})
    assert [e["name"] for e in entries] == [f"{server['name']}.add", f"{server['name']}.slow"]
    add = entries[0]
    assert add["route"] == "mcp" and add["description"] == "Add two numbers."
    assert add["input_schema"]["properties"]["a"]["type"] == "integer"


def test_a_call_answers_once_with_content_and_structured_content(hub, spec):
    outcome = call(hub, clean(spec), "add", {"a": 2, "b": 3})
    assert outcome.outcome == "ok" and not outcome.is_error
    assert outcome.content["structuredContent"] == {"result": 5}
    assert outcome.content["content"][0]["text"] == "5"
    assert len(calls(log_of(spec), "add")) == 1


def test_a_tool_that_fails_is_an_answer_with_is_error(hub, spec):
    outcome = call(hub, clean(spec), "broken", {})
    assert outcome.outcome == "ok" and outcome.is_error
    assert len(calls(log_of(spec), "broken")) == 1


def test_the_deadline_cancels_the_call_and_the_server_sees_it(hub, spec):
    assert call(hub, clean(spec), "add", {"a": 0, "b": 0}).outcome == "ok"  # connected
    began = time.monotonic()
    outcome = call(hub, clean(spec), "slow", {"seconds": 10}, seconds=1.0)
    assert outcome.outcome == "timeout" and outcome.is_error
    assert time.monotonic() - began < 5
    deadline = time.monotonic() + 10
    while not any(e["event"] == "cancelled" for e in log_lines(log_of(spec))):
        assert time.monotonic() < deadline, "the server never saw the cancellation"
        time.sleep(0.05)
    assert len(calls(log_of(spec), "slow")) == 1


def test_an_interrupt_cancels_the_call(hub, spec):
    cancel = threading.Event()
    threading.Timer(0.7, cancel.set).start()
    outcome = call(hub, clean(spec), "slow", {"seconds": 10}, cancel=cancel)
    assert outcome.outcome == "cancelled" and outcome.is_error


def test_a_server_killed_mid_call_is_unknown_and_the_next_call_gets_a_new_server(hub,
                                                                                 tmp_path):
    log = tmp_path / "stdio.log"
    spec = {"name": "local", **stdio_table(log)}
    assert call(hub, spec, "add", {"a": 1, "b": 1}).outcome == "ok"
    pid = calls(log, "add")[0]["pid"]

    def kill_when_called() -> None:
        deadline = time.monotonic() + 10
        while not calls(log, "slow") and time.monotonic() < deadline:
            time.sleep(0.02)
        import os
        import signal
        os.kill(pid, signal.SIGKILL)

    threading.Thread(target=kill_when_called, daemon=True).start()
    outcome = call(hub, spec, "slow", {"seconds": 10})
    assert outcome.outcome == "unknown" and outcome.is_error, outcome
    assert len(calls(log, "slow")) == 1
    again = call(hub, spec, "add", {"a": 2, "b": 2})
    assert again.outcome == "ok"
    assert calls(log, "add")[-1]["pid"] != pid


def test_an_http_server_killed_mid_call_is_unknown_with_exactly_one_call(hub, http_server):
    spec = {"name": "remote", "url": http_server.url}
    assert call(hub, spec, "add", {"a": 1, "b": 1}).outcome == "ok"
    threading.Thread(target=lambda: (_wait_call(http_server.log, "slow"), http_server.kill()),
                     daemon=True).start()
    outcome = call(hub, spec, "slow", {"seconds": 10})
    assert outcome.outcome == "unknown" and outcome.is_error, outcome
    assert len(calls(http_server.log, "slow")) == 1
    # The server is gone: the next request cannot even connect, so it certainly did not run.
    gone = call(hub, spec, "add", {"a": 1, "b": 2})
    assert gone.outcome == "error" and "nothing was sent" in gone.content


def _wait_call(log: Path, tool: str) -> None:
    deadline = time.monotonic() + 10
    while not calls(log, tool) and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_server_down_fails_the_listing_naming_it(hub):
    down = {"name": "gone", "url": f"http://127.0.0.1:{free_port()}/mcp", "timeout_s": 5}
    with pytest.raises(ServerDown) as raised:
        list_servers(hub, {"gone": down}, "s1", {})
    assert raised.value.server == "gone" and "gone" in str(raised.value)


def test_missing_credentials_fail_the_call_before_anything_is_sent(hub, http_server):
    spec = {"name": "remote", "url": http_server.url}
    outcome = call(hub, spec, "whoami", {}, held=None, credentials=True)
    assert outcome.outcome == "error" and "credentials" in outcome.content
    assert calls(http_server.log, "whoami") == []
    token = Credentials(bearer_token="sekret-token-123")
    answered = call(hub, spec, "whoami", {}, held=token, credentials=True)
    assert answered.outcome == "ok"
    assert answered.content["content"][0]["text"] == "authorized"


def test_stdio_processes_are_bounded_per_server(hub, tmp_path):
    spec = {"name": "local", **stdio_table(tmp_path / "stdio.log"), "max_processes": 1}
    assert call(hub, spec, "add", {"a": 1, "b": 1}, session="s1").outcome == "ok"
    refused = call(hub, spec, "add", {"a": 1, "b": 1}, session="s2")
    assert refused.outcome == "error" and refused.content.startswith("overloaded")
    hub.forget_session("s1")
    deadline = time.monotonic() + 10
    while True:
        again = call(hub, spec, "add", {"a": 1, "b": 1}, session="s2")
        if again.outcome == "ok" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert again.outcome == "ok"


def test_an_operator_token_from_the_environment_reaches_an_http_server(hub, http_server,
                                                                       monkeypatch):
    monkeypatch.setenv("BRAIN_TEST_MCP_TOKEN", "operator-token")
    spec = {"name": "remote", "url": http_server.url, "bearer_token_env": "BRAIN_TEST_MCP_TOKEN"}
    answered = call(hub, spec, "whoami", {})
    assert answered.content["content"][0]["text"] == "authorized"


def test_session_env_credentials_reach_a_stdio_server_of_its_own(hub, tmp_path):
    spec = {"name": "local", **stdio_table(tmp_path / "stdio.log")}
    token = Credentials(env=(("TEST_TOKEN", "session-token"),))
    mine = call(hub, spec, "whoami", {}, session="s1", held=token, credentials=True)
    assert mine.content["content"][0]["text"] == "authorized"
    other = call(hub, spec, "whoami", {}, session="s2")
    assert other.content["content"][0]["text"] == "anonymous"
    pids = {line["pid"] for line in calls(tmp_path / "stdio.log", "whoami")}
    assert len(pids) == 2  # one process per (server, session)


def test_a_servers_timeout_s_shortens_the_calls_deadline(hub, http_server):
    spec = {"name": "remote", "url": http_server.url, "timeout_s": 1}
    assert call(hub, spec, "add", {"a": 0, "b": 0}).outcome == "ok"
    began = time.monotonic()
    outcome = call(hub, spec, "slow", {"seconds": 10}, seconds=30)
    assert outcome.outcome == "timeout" and time.monotonic() - began < 5


def test_a_stdio_server_that_died_between_calls_is_started_again_for_the_next(hub, tmp_path):
    import os
    import signal

    log = tmp_path / "stdio.log"
    spec = {"name": "local", **stdio_table(log)}
    assert call(hub, spec, "add", {"a": 1, "b": 1}).outcome == "ok"
    pid = calls(log, "add")[0]["pid"]
    os.kill(pid, signal.SIGKILL)
    time.sleep(1.0)  # its end of output is read meanwhile
    again = call(hub, spec, "add", {"a": 2, "b": 2})
    assert again.outcome == "ok", again
    assert calls(log, "add")[-1]["pid"] != pid


def test_an_http_server_restarted_between_calls_serves_the_next_call(hub, http_server):
    spec = {"name": "remote", "url": http_server.url}
    assert call(hub, spec, "add", {"a": 1, "b": 1}).outcome == "ok"
    http_server.kill()
    http_server.start()  # the same port: a new process with none of the old state
    outcomes = [call(hub, spec, "add", {"a": 2, "b": 2}).outcome for _ in range(2)]
    assert outcomes == ["ok", "ok"], outcomes


def test_arguments_the_server_refuses_are_never_ok_without_is_error(hub, spec):
    outcome = call(hub, clean(spec), "add", {"a": "not a number"})
    assert outcome.is_error and outcome.outcome in ("ok", "error"), outcome
    assert calls(log_of(spec), "add") == []  # refused before the tool ran
    assert call(hub, clean(spec), "add", {"a": 1, "b": 2}).outcome == "ok"


def test_a_stateless_stdio_server_is_one_process_for_every_session(hub, tmp_path):
    log = tmp_path / "stdio.log"
    spec = {"name": "local", **stdio_table(log), "stateless": True}
    for session in ("s1", "s2", "s3"):
        assert call(hub, spec, "add", {"a": 1, "b": 1}, session=session).outcome == "ok"
    assert len({line["pid"] for line in calls(log, "add")}) == 1
    hub.forget_session("s1")  # a session's end leaves the shared process running
    assert call(hub, spec, "add", {"a": 1, "b": 1}, session="s2").outcome == "ok"
    assert len({line["pid"] for line in calls(log, "add")}) == 1
