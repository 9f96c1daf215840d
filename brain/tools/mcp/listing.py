"""`tools/list` of the servers a session names, fetched once at its creation (and by
`brain mcp list`). Every page is read; a server that cannot be reached in its `timeout_s`
fails the whole listing, naming itself."""

from __future__ import annotations

import asyncio
from typing import Any

from brain.tools.mcp.create import ServerDown
from brain.tools.mcp.credentials import Credentials
from brain.tools.mcp.hub import Hub
from brain.tools.mcp.servers import timeout_of

MAX_PAGES = 100


def list_servers(hub: Hub, servers: dict[str, dict[str, Any]], session_id: str,
                 credentials: dict[str, Credentials]) -> dict[str, list[dict[str, Any]]]:
    """Each server's tools as plain JSON objects; raises ServerDown for the first one down."""
    if not servers:
        return {}
    longest = max(timeout_of(spec) for spec in servers.values())

    async def all_of() -> dict[str, list[dict[str, Any]]]:
        names = list(servers)
        found = await asyncio.gather(
            *(_one(hub, servers[n], session_id, credentials.get(n)) for n in names),
            return_exceptions=True)
        for name, result in zip(names, found, strict=True):
            if isinstance(result, BaseException):
                raise ServerDown(name, _reason(result))
        return dict(zip(names, found, strict=True))  # type: ignore[arg-type]

    return hub.run(all_of, longest + 5.0)


async def _one(hub: Hub, spec: dict[str, Any], session_id: str,
               credentials: Credentials | None) -> list[dict[str, Any]]:
    timeout = timeout_of(spec)
    async with asyncio.timeout(timeout):
        connection = await hub.connection(spec, session_id, credentials, timeout)
        client = connection.client
        if client is None:
            raise ConnectionError("the connection closed at once")
        tools: list[dict[str, Any]] = []
        cursor = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(t.model_dump(mode="json", by_alias=True, exclude_none=True)
                         for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _reason(exc.exceptions[0])
    if isinstance(exc, TimeoutError):
        return "no answer within its timeout_s"
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
