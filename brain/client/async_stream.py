"""Following a session live over SSE from asyncio, surviving dropped connections.

The asyncio twin of brain/client/stream.py, with the same rules: the stream owns its cursor (the
last committed Event delivered); when the connection drops (EOF before session_ended, a reset,
or no bytes within the stream timeout) it reconnects with `Last-Event-ID: <cursor>`, so nothing
committed is lost or repeated. The first connection's failures raise at once; later ones are
retried with the same backoff, and `max_reconnects` consecutive failures raise the last error.
A 404 on reconnect (the session was deleted) ends the stream. What each SSE message delivers is
decided by the sync module's `decode_message`, shared by both.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

import httpx

from brain.client.async_api import AsyncTransport
from brain.client.errors import BrainAPIError, ServerError, TransportError, api_error
from brain.client.shapes import Event, ModelDelta
from brain.client.stream import END_KINDS, backoff_delay, decode_message
from brain.net.sse import SseParser


class AsyncEventStream:
    """An async iterator of Event (and ModelDelta when asked); `async with` it or `aclose()`."""

    def __init__(self, transport: AsyncTransport, path: str, *, after: int = 0,
                 deltas: bool = False, timeout: float | None = None, max_reconnects: int = 5,
                 backoff_secs: float = 0.2) -> None:
        self._transport = transport
        self._path = path
        self._cursor = after
        self._deltas = deltas
        self._timeout = timeout
        self._max_reconnects = max_reconnects
        self._backoff_secs = backoff_secs
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._parser = SseParser()
        self._pending: deque[Event | ModelDelta] = deque()
        self._connected_once = False
        self._failures = 0
        self._last_error: BaseException | None = None
        self._ended = False
        self._closed = False
        self.reconnects = 0

    async def connect(self) -> AsyncEventStream:
        """Open the stream now: when this returns the server has subscribed it."""
        self._transport.check_open()
        if self._response is None and not self._closed and not self._connected_once:
            await self._connect()
        return self

    @property
    def cursor(self) -> int:
        """The sequence of the last committed Event delivered (or the starting cursor)."""
        return self._cursor

    def __aiter__(self) -> AsyncEventStream:
        return self

    async def __anext__(self) -> Event | ModelDelta:
        while True:
            self._transport.check_open()
            if self._closed:
                raise StopAsyncIteration
            if self._pending:
                return self._pending.popleft()
            if self._ended:
                await self.aclose()
                raise StopAsyncIteration
            if self._chunks is None:
                await self._connect()
                continue
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                await self._drop(None)
                continue
            except (httpx.HTTPError, OSError) as exc:
                if self._closed:
                    raise StopAsyncIteration from None
                await self._drop(exc)
                continue
            self._failures = 0  # the server is talking: a later drop starts a fresh budget
            for message in self._parser.feed(chunk):
                try:
                    item = decode_message(message, self._cursor, self._deltas)
                except BrainAPIError:
                    await self.aclose()  # the server's last word; a reconnect gets 500 again
                    raise
                if item is None:
                    continue
                if isinstance(item, Event):
                    self._cursor = item.sequence
                    if item.kind in END_KINDS:
                        self._ended = True
                self._pending.append(item)

    async def aclose(self) -> None:
        """Idempotent; an iteration waiting in another task then stops."""
        self._closed = True
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
        if self._failures:
            if self._failures > self._max_reconnects:
                assert self._last_error is not None
                raise self._last_error
            await asyncio.sleep(backoff_delay(self._failures, self._backoff_secs))
            if self._closed:
                return
            self._transport.check_open()
        headers = {"Accept": "text/event-stream"}
        if self._connected_once:
            headers["Last-Event-ID"] = str(self._cursor)
        try:
            response = await self._transport.open_stream(
                self._path, query={"after": self._cursor}, headers=headers,
                timeout=self._timeout)
        except TransportError as exc:
            if not self._connected_once:
                raise
            self._fail(exc)
            return
        if response.status_code != 200:
            try:
                body = await response.aread()
            except (httpx.HTTPError, OSError):
                body = b""
            await response.aclose()
            error = api_error(response.status_code, body,
                              {k.lower(): v for k, v in response.headers.items()})
            if self._connected_once and response.status_code == 404:
                self._ended = True  # deleted while we were away: the stream is over
                return
            if self._connected_once and isinstance(error, ServerError):
                self._fail(error)
                return
            raise error
        if self._closed:
            await response.aclose()
            return
        self._response = response
        self._chunks = response.aiter_raw()
        self._parser = SseParser()
        if self._connected_once:
            self.reconnects += 1
        self._connected_once = True

    def _fail(self, error: BaseException) -> None:
        self._failures += 1
        self._last_error = error

    async def _drop(self, error: BaseException | None) -> None:
        await self._release()
        self._transport.check_open()
        if self._closed or self._ended:
            return
        self._fail(error or TransportError("the event stream ended before session_ended",
                                           maybe_applied=False))
