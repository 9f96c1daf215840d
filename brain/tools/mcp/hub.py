"""One asyncio event loop thread holding every MCP connection of a process.

The SDK's client is async (anyio); the Tool executor is a Thespian actor whose calls run in
plain worker threads. So one daemon thread runs one event loop, and a worker thread hands it a
coroutine and waits for the answer (`submit`). Connections live on that loop:

- a Streamable HTTP server has one connection (one HTTP connection pool) shared by every
  session without credentials of its own, and one per session that brought credentials;
- a stdio server runs as a child process per (server, session), or one per server when the
  operator marks it `stateless`; at most `max_processes` per server, past which a call is
  refused as `overloaded` before anything is sent.

A connection that failed under a call is dropped, so the next call starts a new one (a stdio
server is started again); nothing is ever resent on it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from brain.tools.mcp.credentials import Credentials
from brain.tools.mcp.servers import DEFAULT_MAX_PROCESSES, transport_of

MARK = "dev.brain/call"
"""The `_meta` key naming the effect (`session/sequence`) on each `tools/call` Brain sends."""
STOP_SECS = 5.0


class Overloaded(Exception):
    """A stdio server is at its process bound; nothing was sent."""


class SendWatch(httpx2.AsyncHTTPTransport):
    """The HTTP transport under a connection: it notes each `tools/call` whose request could
    not even be connected, so the caller may say `error` (certainly not sent), never more."""

    def __init__(self, unsent: set[str]) -> None:
        super().__init__()
        self.unsent = unsent

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await super().handle_async_request(request)
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            mark = _mark_of(request)
            if mark is not None:
                self.unsent.add(mark)
            raise


def _mark_of(request: httpx2.Request) -> str | None:
    body = request.content
    if MARK.encode() not in body:
        return None
    try:
        return json.loads(body)["params"]["_meta"][MARK]
    except (ValueError, KeyError, TypeError):
        return None


class Connection:
    """One entered `mcp.Client`, held open by a task of its own until `close`."""

    def __init__(self, key: tuple[str, ...], spec: dict[str, Any],
                 credentials: Credentials | None) -> None:
        self.key = key
        self.spec = spec
        self.credentials = credentials
        self.unsent: set[str] = set()
        self.client: Client | None = None
        self.broken = False
        self._closing = asyncio.Event()
        self._task: asyncio.Task | None = None

    def usable(self) -> bool:
        """Open, and not yet found closed by the SDK (a stdio server that exited between two
        calls: its output reached end of file). A request on a closed connection would be
        refused before it is written, so opening a new one is no resend. The SDK keeps that
        state on its dispatcher (a private attribute, hence the pinned SDK range); without it,
        the connection counts as usable and a failure is judged as the call's own."""
        if self.broken or self.client is None:
            return False
        dispatcher = getattr(self.client.session, "_dispatcher", None)
        return not getattr(dispatcher, "_closed", False)

    async def open(self, timeout: float) -> None:
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except BaseException:
            await self.close()
            raise

    async def _hold(self, ready: asyncio.Future) -> None:
        try:
            async with Client(self._transport(), read_timeout_seconds=None) as client:
                self.client = client
                ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(
                    "the connection to the MCP server was closed"))
            self.broken = True
        finally:
            self.client = None

    def _transport(self) -> Any:
        spec = self.spec
        if transport_of(spec) == "http":
            headers = dict(spec.get("headers", {}))
            token_env = spec.get("bearer_token_env")
            if token_env and os.environ.get(token_env):
                headers["Authorization"] = f"Bearer {os.environ[token_env]}"
            if self.credentials is not None:
                headers.update(self.credentials.http_headers())
            http = httpx2.AsyncClient(headers=headers, transport=SendWatch(self.unsent),
                                      timeout=httpx2.Timeout(30.0, read=None))
            return streamable_http_client(spec["url"], http_client=http)
        env = dict(spec.get("env", {}))  # over the SDK's short list of safe variables
        if self.credentials is not None:
            env.update(dict(self.credentials.env))
        params = StdioServerParameters(command=spec["command"], args=list(spec.get("args", [])),
                                       env=env)
        return stdio_client(params, errlog=sys.stderr)

    async def close(self) -> None:
        self._closing.set()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, STOP_SECS)


class Hub:
    """The loop thread and the connections on it. Thread-safe from any worker thread."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-hub",
                                        daemon=True)
        self._thread.start()
        self._connections: dict[tuple[str, ...], Connection] = {}
        self._opening: dict[tuple[str, ...], asyncio.Future] = {}

    def submit(self, coro: Awaitable[Any]) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]

    def cancel_soon(self, future: concurrent.futures.Future) -> None:
        """Cancel a submitted coroutine from another thread (the SDK then sends
        `notifications/cancelled` for a request in flight)."""
        self._loop.call_soon_threadsafe(future.cancel)

    @staticmethod
    def key_of(spec: dict[str, Any], session_id: str,
               credentials: Credentials | None) -> tuple[str, ...]:
        name = spec["name"]
        if transport_of(spec) == "http":
            return (name, session_id) if credentials is not None else (name,)
        return (name,) if spec.get("stateless") else (name, session_id)

    async def connection(self, spec: dict[str, Any], session_id: str,
                         credentials: Credentials | None, timeout: float) -> Connection:
        """The live connection for this (server, session), opened (once) when there is none."""
        key = self.key_of(spec, session_id, credentials)
        while True:
            held = self._connections.get(key)
            if held is not None and held.usable():
                return held
            if held is not None:
                self._connections.pop(key, None)
                asyncio.ensure_future(held.close())
            opening = self._opening.get(key)
            if opening is None:
                break
            await asyncio.shield(opening)  # someone else is opening it: use theirs
        self._check_bound(spec)
        done: asyncio.Future = asyncio.get_running_loop().create_future()
        self._opening[key] = done
        connection = Connection(key, spec, credentials)
        try:
            await connection.open(timeout)
            self._connections[key] = connection
            return connection
        finally:
            self._opening.pop(key, None)
            done.set_result(None)

    def _check_bound(self, spec: dict[str, Any]) -> None:
        if transport_of(spec) != "stdio":
            return
        bound = spec.get("max_processes", DEFAULT_MAX_PROCESSES)
        running = sum(1 for key in (*self._connections, *self._opening) if key[0] == spec["name"])
        if running >= bound:
            raise Overloaded(f"MCP server {spec['name']} already runs {running} processes "
                             f"(max_processes); nothing was sent")

    def drop(self, connection: Connection) -> None:
        """Forget a connection that failed under a call; the next call opens a new one."""
        connection.broken = True
        if self._connections.get(connection.key) is connection:
            del self._connections[connection.key]
        asyncio.ensure_future(connection.close())

    def forget_session(self, session_id: str) -> None:
        """Close the session's own connections (and stop its stdio processes)."""
        self.run_soon(self._forget(session_id))

    async def _forget(self, session_id: str) -> None:
        mine = [key for key in self._connections if len(key) > 1 and key[1] == session_id]
        for key in mine:
            connection = self._connections.pop(key)
            await connection.close()

    def run_soon(self, coro: Awaitable[Any]) -> None:
        self.submit(coro)

    def run(self, make: Callable[[], Awaitable[Any]], timeout: float) -> Any:
        """Run a coroutine on the loop and wait for it (for listings, not for Tool calls)."""
        return self.submit(make()).result(timeout)

    def close(self) -> None:
        async def close_all() -> None:
            for connection in list(self._connections.values()):
                await connection.close()
            self._connections.clear()
        with contextlib.suppress(Exception):
            self.submit(close_all()).result(STOP_SECS * 2)
        self._loop.call_soon_threadsafe(self._loop.stop)
