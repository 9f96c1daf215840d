"""Following a session live over SSE from asyncio, surviving dropped connections.

The asyncio twin of brain/client/stream.py: the same rules of cursor, reconnects and their
budget (brain/client/stream_state.py, shared by both), with httpx's async reads. A reconnect
sends `Last-Event-ID: <cursor>`, so nothing committed is lost or repeated.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx

from brain.client.async_api import AsyncTransport
from brain.client.errors import BrainAPIError, TransportError
from brain.client.shapes import Event, ModelDelta
from brain.client.stream_state import CONNECT, ITEM, STOP, StreamBase


class AsyncEventStream(StreamBase[AsyncTransport]):
    """An async iterator of Event (and ModelDelta when asked); `async with` it or `aclose()`."""

    def __init__(self, transport: AsyncTransport, path: str, **options: Any) -> None:
        super().__init__(transport, path, **options)
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None

    async def connect(self) -> AsyncEventStream:
        """Open the stream now: when this returns the server has subscribed it."""
        if self._first_connection_due():
            await self._connect()
        return self

    def __aiter__(self) -> AsyncEventStream:
        return self

    async def __anext__(self) -> Event | ModelDelta:
        state = self._state
        while True:
            self._transport.check_open()
            step = state.next_step(connected=self._chunks is not None)
            if step == ITEM:
                return state.pending.popleft()
            if step == STOP:
                await self.aclose()
                raise StopAsyncIteration
            if step == CONNECT:
                await self._connect()
                continue
            try:
                chunk = await self._chunks.__anext__()  # type: ignore[union-attr]
            except StopAsyncIteration:
                await self._drop(None)
                continue
            except (httpx.HTTPError, OSError) as exc:
                if state.closed:
                    raise StopAsyncIteration from None
                await self._drop(exc)
                continue
            try:
                state.feed(chunk)
            except BrainAPIError:
                await self.aclose()  # the server's last word; a reconnect gets 500 again
                raise

    async def aclose(self) -> None:
        """Idempotent; an iteration waiting in another task then stops."""
        self._state.closed = True
        await self._release()

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- internals --------------------------------------------------------------------------

    async def _release(self) -> None:
        response, self._response, self._chunks = self._response, None, None
        if response is not None:
            try:
                await response.aclose()
            except (httpx.HTTPError, OSError, RuntimeError):
                pass

    async def _connect(self) -> None:
        state = self._state
        pause = state.pause_before_connect()
        if pause is not None:
            await asyncio.sleep(pause)
            if state.closed:
                return
            self._transport.check_open()
        query, headers = state.request()
        try:
            response = await self._transport.open_stream(self._path, query=query,
                                                         headers=headers, timeout=self._timeout)
        except TransportError as exc:
            state.unreachable(exc)
            return
        body = b""
        if response.status_code != 200:
            try:
                body = await response.aread()
            except (httpx.HTTPError, OSError):
                pass
        keep = False
        try:
            keep = state.answered(response.status_code,
                                  {k.lower(): v for k, v in response.headers.items()}, body)
        finally:
            if keep:
                self._response, self._chunks = response, response.aiter_raw()
            else:
                await response.aclose()

    async def _drop(self, error: BaseException | None) -> None:
        await self._release()
        self._transport.check_open()
        self._state.dropped(error)
