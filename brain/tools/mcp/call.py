"""One `tools/call` sent once, and what Brain may claim about it afterwards.

The session has journaled `tool_call_started` before this runs. What Brain may claim depends on
how far the request got:

- no connection could be opened, the server is at its process bound (the message says
  `overloaded`), or the HTTP request could not even be connected: nothing reached the server,
  so `error`;
- the server answered: `ok`, with its `content`, `structuredContent` and `isError` as the
  result (a JSON-RPC error answer is the server saying no: `error`);
- the transport failed after the request was written, or the answer was unreadable: `unknown`,
  and the connection is dropped; the request is never sent again;
- the deadline (BRAIN_MAX_TOOL_SECS, shortened by the server's `timeout_s` when it is set)
  struck: `timeout`;
  an interrupt or the turn's deadline: `cancelled`. Either way the SDK tells the server with
  `notifications/cancelled` (on Streamable HTTP at the 2026 protocol, by closing the request's
  stream, which is that version's spelling of it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any

from mcp import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from brain.environments.deadline import Deadline
from brain.tools.mcp.credentials import Credentials
from brain.tools.mcp.hub import MARK, Hub, Overloaded
from brain.tools.mcp.servers import timeout_of
from brain.tools.outcome import ToolOutcome

WAIT_SLICE_SECS = 0.05
CANCEL_GRACE_SECS = 2.0
Progress = Callable[[dict[str, Any]], None]
"""Receives `{progress, total, message}` as a server reports them (live only, never journaled)."""


class _NotSent(Exception):
    """The call failed before its request could reach the server."""


def call_mcp_tool(hub: Hub, tool: dict[str, Any], arguments: Any, *, session_id: str,
                  sequence: int, credentials: Credentials | None, until: Deadline,
                  cancel: threading.Event, progress: Progress | None = None) -> ToolOutcome:
    """Send the `tools/call` for `tool` (an entry recorded at creation) once; never raises."""
    spec = tool.get("server")
    if not isinstance(spec, dict) or not isinstance(tool.get("tool"), str):
        return ToolOutcome.failed("error", "mcp tool configuration names no server and tool")
    if tool.get("credentials") and credentials is None:
        return ToolOutcome.failed("error", (
            f"the credentials for MCP server {spec.get('name')} are not held (they live in "
            "memory only and Brain restarted since the session was created); nothing was sent"))
    if not isinstance(arguments, dict):
        return ToolOutcome.failed("error", "an MCP tool's input must be an object")
    # The call's deadline; a server's own `timeout_s`, when the operator set one, may only
    # shorten it.
    remaining = [r for r in (until.remaining(), spec.get("timeout_s")) if r is not None]
    budget = float(min(remaining)) if remaining else None
    mark = f"{session_id}/{sequence}"
    coro = _call(hub, spec, tool["tool"], arguments, session_id, credentials, mark, budget,
                 progress)
    future = hub.submit(coro)
    cancelled_at = None
    # The coroutine keeps the deadline itself; this bound only keeps the thread from waiting
    # for ever on a loop that stopped answering.
    give_up = None if budget is None else time.monotonic() + budget + CANCEL_GRACE_SECS * 2
    while True:
        try:
            return future.result(WAIT_SLICE_SECS)
        except concurrent.futures.TimeoutError:
            pass
        except concurrent.futures.CancelledError:
            return ToolOutcome.failed("cancelled", "tool call cancelled")
        if give_up is not None and time.monotonic() > give_up:
            hub.cancel_soon(future)
            return ToolOutcome.failed("timeout", "tool call timed out")
        if cancel.is_set() and cancelled_at is None:
            cancelled_at = time.monotonic()
            hub.cancel_soon(future)
        elif cancelled_at is not None and time.monotonic() - cancelled_at > CANCEL_GRACE_SECS:
            return ToolOutcome.failed("cancelled", "tool call cancelled")


async def _call(hub: Hub, spec: dict[str, Any], name: str, arguments: dict[str, Any],
                session_id: str, credentials: Credentials | None, mark: str,
                budget: float | None, progress: Progress | None) -> ToolOutcome:
    server = spec.get("name")
    started = time.monotonic()
    try:
        connect_within = timeout_of(spec) if budget is None else min(budget, timeout_of(spec))
        connection = await hub.connection(spec, session_id, credentials, connect_within)
    except Overloaded as exc:
        return ToolOutcome.failed("error", f"overloaded: {exc}")
    except asyncio.CancelledError:
        return ToolOutcome.failed("cancelled", "tool call cancelled before it was sent")
    except TimeoutError:
        return ToolOutcome.failed("timeout", f"MCP server {server} did not connect in time; "
                                             "nothing was sent")
    except Exception as exc:
        return ToolOutcome.failed("error", f"could not connect to MCP server {server} "
                                           f"({_reason(exc)}); nothing was sent")
    left = None if budget is None else budget - (time.monotonic() - started)
    if left is not None and left <= 0:
        return ToolOutcome.failed("timeout", "tool call deadline passed before it was sent")

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if progress is not None:
            progress({"progress": value, "total": total, "message": message})

    client = connection.client
    if client is None:
        return ToolOutcome.failed("error", f"the connection to MCP server {server} closed "
                                           "before the call; nothing was sent")
    try:
        async with asyncio.timeout(left):
            result = await client.session.call_tool(
                name, arguments, progress_callback=on_progress, meta={MARK: mark})
    except TimeoutError:
        return ToolOutcome.failed("timeout", "tool call timed out")
    except asyncio.CancelledError:
        return ToolOutcome.failed("cancelled", "tool call cancelled")
    except MCPError as exc:
        if exc.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
            # The server said no. The connection goes too: an error here may mean it no longer
            # knows this client (a restarted server answers 404 to an old MCP session).
            hub.drop(connection)
            return ToolOutcome.failed("error", f"MCP server {server} refused the call: "
                                               f"{exc.message}")
        return _lost(hub, connection, mark, server, exc)
    except Exception as exc:
        return _lost(hub, connection, mark, server, exc)
    body = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    content: dict[str, Any] = {"content": body.get("content", [])}
    if "structuredContent" in body:
        content["structuredContent"] = body["structuredContent"]
    return ToolOutcome.ok(content, is_error=bool(body.get("isError", False)))


def _lost(hub: Hub, connection: Any, mark: str, server: Any, exc: BaseException) -> ToolOutcome:
    """The transport failed under the call: `error` only if the request never left."""
    hub.drop(connection)
    if mark in connection.unsent:
        return ToolOutcome.failed("error", f"could not reach MCP server {server} "
                                           f"({_reason(exc)}); nothing was sent")
    return ToolOutcome.failed("unknown", f"the connection to MCP server {server} failed "
                                         f"during the call ({_reason(exc)}); it may have run")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _reason(exc.exceptions[0])
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
