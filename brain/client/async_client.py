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

from collections.abc import AsyncIterator
from typing import Any, Self, Unpack

from brain.client import routes
from brain.client.async_api import AsyncApi, AsyncTransport
from brain.client.async_host import AsyncHostServer, AsyncToolHandler
from brain.client.async_session import AsyncSession
from brain.client.client_base import ClientBase
from brain.client.routes import CreateFields


class AsyncBrain(ClientBase[AsyncApi, AsyncSession]):
    """The sync `Brain`, awaited: the same options (client_base.py), calls and answers, run by
    the asyncio shell over the same requests (routes.py)."""

    transport_class = AsyncTransport
    api_class = AsyncApi
    session_class = AsyncSession
    user_agent = ClientBase.user_agent + " asyncio"

    # --- lifetime ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop this client's host servers at once (their running handlers are cancelled) and
        release connections; idempotent. Never interrupts, ends or deletes a session."""
        for host in list(self._parts):
            await host.aclose(timeout=0)
        await self._api.transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

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
        self._own(host)
        return host.start()

    # --- sessions ---------------------------------------------------------------------------

    async def create_session(self, *, idempotency_key: str | None = None,
                             **fields: Unpack[CreateFields]) -> AsyncSession:
        """POST /v1/sessions; the sync `create_session`'s keywords, each left None omitted."""
        return self._handle(await self._api.run(routes.create_session(fields, idempotency_key)))

    async def session(self, session_id: str, *, fetch: bool = True) -> AsyncSession:
        """A handle for an existing session, read from the server unless `fetch=False`."""
        self._api.check_open()
        handle = AsyncSession(self._api, session_id)
        return await handle.refresh() if fetch else handle

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
            page = await self._api.run(routes.list_sessions(status, limit, cursor))
            for state in page["sessions"]:
                yield self._handle(state)
            cursor = page.get("next_cursor")
            if not cursor:
                return
