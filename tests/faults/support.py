"""What the fault tests that strike a turn mid-way share: a scripted model that answers
"use the tool" slowly with a call of the `remote` HTTP tool, so a test can strike while the
model call is under way and then see whether the tool was called, and a real server so
configured.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from tests.support.server import BrainServer
from tests.tools.toolserver import ToolServer

SLOW_TOOL_CONFIG = """
[models.slowtool]
provider = "scripted"
script = [
  {{ when_last_user_matches = "use the tool", delay_ms = {delay_ms},{text}\
 tool_calls = [ {{ name = "remote", input = {{ a = 1 }} }} ] }},
  {{ when_last_user_matches = "use the tool", text = "tool done" }},
]

[tools.remote]
route = "http"
url = "{url}"
description = "A remote tool that logs every invocation."
"""


def slow_tool_config(tool_url: str, delay_ms: int, text: str | None = None) -> str:
    """The configuration: model `slowtool` (its tool-calling answer after `delay_ms`, with
    `text` besides when given) and tool `remote` at `tool_url`."""
    text_field = "" if text is None else f" text = {json.dumps(text)},"
    return SLOW_TOOL_CONFIG.format(url=tool_url, delay_ms=delay_ms, text=text_field)


@contextmanager
def slow_tool_server(tmp_path: Path, data_dir: Path, *, delay_ms: int, text: str | None = None,
                     env: dict[str, str] | None = None) -> Iterator[tuple[BrainServer, ToolServer]]:
    """A started server on `data_dir` with `slow_tool_config`, and the tool's server; both are
    stopped on leaving."""
    tool = ToolServer()
    try:
        config = tmp_path / "brain.toml"
        config.write_text(slow_tool_config(tool.url, delay_ms, text))
        server = BrainServer(data_dir, env={"BRAIN_CONFIG": str(config), **(env or {})})
        try:
            server.start()
            yield server, tool
        finally:
            server.kill()
    finally:
        tool.close()


def post_turn(server: BrainServer, sid: str, text: str, key: str | None = None
              ) -> requests.Response:
    """A synchronous turn, with an Idempotency-Key when given."""
    headers = {"Idempotency-Key": key} if key else {}
    return server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": text},
                          headers=headers)
