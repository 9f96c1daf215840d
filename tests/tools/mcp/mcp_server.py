"""A real MCP server for Brain's tests, written with the SDK's server side.

Run as `python -m tests.tools.mcp.mcp_server stdio LOG` or `... http LOG PORT`. Every call,
cancellation and header it sees is appended to LOG as one JSON line, so a test can count
exactly how many times a tool ran, whatever happened to the client.
"""

from __future__ import annotations

import json
import os
import sys
import time

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("brain-test")
LOG = sys.argv[2] if len(sys.argv) > 2 else os.devnull


def note(**fields: object) -> None:
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps({"pid": os.getpid(), "t": time.time(), **fields}) + "\n")
        log.flush()
        os.fsync(log.fileno())


def _auth(ctx: Context) -> str | None:
    request = getattr(ctx.request_context, "request", None)
    headers = getattr(request, "headers", None)
    return headers.get("authorization") if headers is not None else os.environ.get("TEST_TOKEN")


@server.tool(description="Add two numbers.")
def add(a: int, b: int) -> int:
    note(event="call", tool="add", a=a, b=b)
    return a + b


@server.tool(description="Return the text unchanged.")
def echo(text: str) -> str:
    note(event="call", tool="echo")
    return text


@server.tool(description="Sleep, reporting progress, then answer.")
async def slow(seconds: float, ctx: Context) -> str:
    note(event="call", tool="slow", seconds=seconds)
    try:
        steps = max(1, int(seconds * 10))
        for step in range(steps):
            await ctx.report_progress(step, steps, f"step {step}")
            await anyio.sleep(seconds / steps)
    except BaseException:
        with anyio.CancelScope(shield=True):
            note(event="cancelled", tool="slow")
        raise
    note(event="done", tool="slow")
    return "slept"


@server.tool(description="Fail with isError.")
def broken() -> str:
    note(event="call", tool="broken")
    raise ValueError("broken on purpose")


@server.tool(description="Say which Authorization header or token reached the server.")
def whoami(ctx: Context) -> str:
    auth = _auth(ctx)
    note(event="call", tool="whoami", has_auth=auth is not None)
    return "authorized" if auth else "anonymous"


@server.tool(description="A tool the operator hides with an allow-list.")
def hidden() -> str:
    note(event="call", tool="hidden")
    return "hidden"


if __name__ == "__main__":
    note(event="start", transport=sys.argv[1])
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[3]))
