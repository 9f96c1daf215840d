"""`AsyncBrain(base_url, token)`: the asyncio twin of the sync `Brain` client, on httpx.

The same calls as `Brain` (brain/client/sessions_client.py), awaited: create, read and list
sessions, and AsyncSession handles (brain/client/async_session.py) whose send, submit, pages,
transcript, follow, interrupt, end and delete mirror the sync Session's. Answers are the same
shapes, failures the same exceptions, keys the same rules (docs/client.md, "The asyncio
client"). Serving `host` Tools and Environments with `async def` handlers is not part of it:
use the sync `Brain.serve_host` in a thread for that.

One AsyncBrain belongs to one event loop (its httpx.AsyncClient does). `aclose()` (or `async
with`) releases its connections and sends nothing about sessions, like the sync `close()`.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from typing import Any, Self

from brain import __version__
from brain.client.async_api import AsyncApi, AsyncTransport
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
        timeouts = Timeouts(connect=connect_timeout, request=timeout, turn=turn_timeout,
                            stream=stream_timeout)
        self._api = AsyncApi(AsyncTransport(self.base_url, headers, timeouts,
                                            max_idle=max_idle_connections,
                                            ssl_context=ssl_context))

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<AsyncBrain {self.base_url} {state}>"  # never the token

    # --- lifetime ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._api.closed

    async def aclose(self) -> None:
        """Release connections; idempotent. Never interrupts, ends or deletes a session."""
        await self._api.transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def with_token(self, token: str) -> Self:
        """A new client for the same server and options, with its own connections and lifetime."""
        self._api.check_open()
        return type(self)(self.base_url, token, **self._options)

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
