"""MCP tools in Python Agentloops: the default loop offers them unchanged, and a loop that
reads `tools.definitions()` offers only them (tests/agentloop/python_loops/mcp_only.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from brain.journal import JournalScan
from tests.support.mcp_servers import McpHttpServer, calls
from tests.support.python_guests import python_guest
from tests.support.server import BrainServer, configured

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install '.[mcp]')")

# The loops run on componentize-py's own Python inside Wasm, not on the one running Brain.
pytestmark = pytest.mark.slow_e2e


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrainServer, Path]]:
    tmp = tmp_path_factory.mktemp("mcp-python")
    remote = McpHttpServer(tmp / "remote.log").start()
    config = f"""
[agentloops.py_default]
path = "{python_guest("default_loop")}"
[agentloops.mcp_only]
path = "{python_guest("mcp_only")}"

[models.adder]
provider = "scripted"
script = [
  {{ tool_calls = [ {{ name = "remote.add", input = {{ a = 20, b = 22 }} }} ] }},
  {{ text = "done" }},
]

[mcp_servers.remote]
url = "{remote.url}"
tools = ["add", "echo"]
"""
    server = configured(tmp, config)
    try:
        server.start()
        yield server, remote.log
    finally:
        server.kill()
        remote.stop()


def records(server: BrainServer, sid: str) -> list[dict]:
    journal = server.data_dir / "sessions" / sid / "journal"
    return [frame.record for frame in JournalScan(journal)]


@pytest.mark.parametrize("loop", ["py_default", "mcp_only"])
def test_python_loops_call_mcp_tools(served: tuple[BrainServer, Path], loop: str) -> None:
    server, log = served
    before = len(calls(log, "add"))
    sid = server.create_session(agentloop=loop, model="adder", tools=["echo"],
                                mcp_servers=["remote"])["id"]
    assert server.send(sid, "add please")["output"] == "done"
    journal = records(server, sid)
    ended = [r for r in journal if r["kind"] == "tool_call_ended"]
    assert ended[0]["result"]["content"]["structuredContent"] == {"result": 42}
    assert len(calls(log, "add")) == before + 1
    offered = next(r for r in journal if r["kind"] == "model_call_started")["tools"]
    if loop == "mcp_only":
        assert offered == ["remote.add", "remote.echo"]
    else:
        assert offered == ["echo", "remote.add", "remote.echo"]
