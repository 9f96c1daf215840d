"""Local Environments through a real server: setup at create, Tool-routed ops, confinement."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.guests import example_guest
from tests.support.server import BrainServer, configured

CONFIG = """
[tools.shell]
route = "environment"
environment = "local"
op = "exec"
description = "Run a command in the session's working tree."

[tools.reader]
route = "environment"
environment = "local"
op = "read"
description = "Read a file of the working tree."

[agentloops.script]
path = "{script}"
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[BrainServer]:
    s = configured(tmp_path, CONFIG.format(script=example_guest("host_script")),
                   {"SECRET_OF_THE_SERVER": "do-not-leak"})
    try:
        yield s.start()
    finally:
        s.kill()


def test_tool_routed_environment_ops_stay_inside_the_tree(server: BrainServer) -> None:
    sid = server.create_session(agentloop="script", tools=["shell", "reader"],
                                environments=["local"])["id"]
    calls = [{"op": "tools.call", "calls": [{"name": "shell", "input": {
        "argv": ["sh", "-c", "echo hello > note.txt; env"]}}]},
        {"op": "tools.call", "calls": [{"name": "reader", "input": {"path": "note.txt"}}]},
        {"op": "tools.call", "calls": [{"name": "reader", "input": {"path": "../../x"}}]},
        {"op": "tools.call", "calls": [{"name": "reader", "input": {"path": "/etc/passwd"}}]}]
    result = server.send(sid, json.dumps(calls))
    assert result["status"] == "ended", result
    [ran], [read], [escape], [absolute] = (out["results"] for out in result["output"])
    assert ran["outcome"] == "ok" and ran["content"]["exit_code"] == 0
    assert "do-not-leak" not in ran["content"]["stdout"]  # a scrubbed environment
    assert read["content"]["content"] == "hello\n"
    for refused in (escape, absolute):
        assert (refused["outcome"], refused["is_error"]) == ("error", True)
    tree = server.data_dir / "environments" / sid / "local"
    assert (tree / "note.txt").read_text() == "hello\n"
    kinds = [e["kind"] for e in server.events(sid)]
    assert kinds[:3] == ["session_created", "environment_op_started", "environment_op_ended"]
