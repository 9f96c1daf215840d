"""`AsyncBrain(base_url, token)`: the asyncio twin of the sync `Brain` client, on httpx.

The same calls as `Brain` (brain/client/sessions_client.py), awaited: create, read and list
sessions, and AsyncSession handles (brain/client/async_session.py) whose send, submit, pages,
transcript, follow, interrupt, end and delete mirror the sync Session's. Answers are the same
shapes, failures the same exceptions, keys the same rules (docs/client.md, "The asyncio
client"). `serve_host` serves `host` Tools and Environments with `async def` handlers from
the same event loop (brain/client/async_host.py).

One AsyncBrain belongs to one event loop (its httpx.AsyncClient does). `aclose()` (or `async
with`) stops the host servers it started, releases its connections and sends nothing about
sessions, like the sync `close()`.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from typing import Any, Self

from brain import __version__
from brain.client.async_api import AsyncApi, AsyncTransport
from brain.client.async_host import AsyncHostServer, AsyncToolHandler
from brain.client.async_session import AsyncSession
from brain.client.sessions_client import session_body
from brain.client.transport import Timeouts


class AsyncBrain:
    def __init__(self, base_url: str, token: str, *, timeout: float = 90.0,
                 connect_timeout: float = 10.0, turn_timeout: float = 1920.0,
                 stream_timeout: float = 45.0, max_idle_connections: int = 4,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        """The sync `Brain`'s options, with the same meaning (see Timeouts)."""
        self.base_url = base_url.rstrip("/")
        self._options: dict[str, Any] = {
            "timeout": timeout, "connect_timeout": connect_timeout,
            "turn_timeout": turn_timeout, "stream_timeout": stream_timeout,
            "max_idle_connections": max_idle_connections, "ssl_context": ssl_context,
        }
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json",
                   "User-Agent": f"brain-python/{__version__} asyncio"}
        self._headers = headers
        self._timeouts = Timeouts(connect=connect_timeout, request=timeout, turn=turn_timeout,
                                  stream=stream_timeout)
        self._api = AsyncApi(self._new_transport(max_idle_connections))
        self._hosts: list[AsyncHostServer] = []

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<AsyncBrain {self.base_url} {state}>"  # never the token

    # --- lifetime ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._api.closed

    async def aclose(self) -> None:
        """Stop this client's host servers at once (their running handlers are cancelled) and
        release connections; idempotent. Never interrupts, ends or deletes a session."""
        for host in list(self._hosts):
            await host.aclose(timeout=0)
        await self._api.transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def with_token(self, token: str) -> Self:
        """A new client for the same server and options, with its own connections and lifetime."""
        self._api.check_open()
        return type(self)(self.base_url, token, **self._options)

    # --- host Tools and Environments --------------------------------------------------------

    async def serve_host(self, tools: dict[str, AsyncToolHandler] | None = None,
                         environments: dict[str, Any] | None = None, *, wait_secs: float = 25.0,
                         max_concurrency: int = 16) -> AsyncHostServer:
        """Serve `host` Tools and Environments from this event loop until aclose().

        The sync `Brain.serve_host`'s arguments and answers: `tools` maps configured host Tool
        names to `async def handler(call) -> content` (or `{content, is_error, events}`);
        `environments` maps configured host Environment names to objects with `setup()
        detach() teardown() exec(request) read(request) write(request)`, async or not. A
        handler that is not `async def` runs in a worker thread (docs/host-tools.md).
        """
        self._api.check_open()
        host = AsyncHostServer(self, tools, environments, wait_secs=wait_secs,
                               max_concurrency=max_concurrency)
        self._hosts.append(host)
        return host.start()

    def _new_transport(self, max_idle: int) -> AsyncTransport:
        """Connections of this client's server, token and timeouts, with a lifetime of their own."""
        return AsyncTransport(self.base_url, self._headers, self._timeouts, max_idle=max_idle,
                              ssl_context=self._options["ssl_context"])

    def _disown(self, part: AsyncHostServer) -> None:
        """`part` stopped by itself: this client's aclose has nothing left to stop in it."""
        if part in self._hosts:
            self._hosts.remove(part)

    # --- sessions ---------------------------------------------------------------------------

    async def create_session(self, *, agentloop: str | None = None, model: str | None = None,
                             tools: list[str] | None = None,
                             environments: list[str] | None = None,
                             transcript: list[dict[str, Any]] | None = None,
                             idle_ttl_ms: int | None = None,
                             metadata: dict[str, Any] | None = None,
                             idempotency_key: str | None = None) -> AsyncSession:
        """POST /v1/sessions; every argument left None takes the server's default."""
        body = session_body(agentloop=agentloop, model=model, tools=tools,
                            environments=environments, transcript=transcript,
                            idle_ttl_ms=idle_ttl_ms, metadata=metadata)
        answer = await self._api.call("POST", "/v1/sessions", body=body,
                                      idempotency_key=idempotency_key)
        state = answer.json()
        return AsyncSession(self._api, state["id"], state)

    async def session(self, session_id: str, *, fetch: bool = True) -> AsyncSession:
        """A handle for an existing session, read from the server unless `fetch=False`."""
        self._api.check_open()
        handle = AsyncSession(self._api, session_id)
        if fetch:
            await handle.refresh()
        return handle

    def sessions(self, status: str | None = None,
                 limit: int | None = None) -> AsyncIterator[AsyncSession]:
        """Every session, newest first (`async for`), following `next_cursor`; `limit` is the
        page size."""
        self._api.check_open()
        return self._iter_sessions(status, limit)

    async def _iter_sessions(self, status: str | None,
                             limit: int | None) -> AsyncIterator[AsyncSession]:
        cursor = None
        while True:
            answer = await self._api.call("GET", "/v1/sessions",
                                          query={"status": status, "limit": limit,
                                                 "cursor": cursor})
            page = answer.json()
            for state in page["sessions"]:
                yield AsyncSession(self._api, state["id"], state)
            cursor = page.get("next_cursor")
            if not cursor:
                return
