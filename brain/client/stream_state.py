"""What a live event stream knows and decides, apart from how it reads: shared by the sync
stream (brain/client/stream.py, blocking http.client) and the asyncio one (async_stream.py,
httpx), so the two cannot drift apart on the rules that make a stream lose and repeat nothing.

The rules: the stream's cursor is the sequence of the last committed Event it delivered. A
reconnect sends `Last-Event-ID: <cursor>`, and an Event at or below the cursor is skipped. The
first connection's failures raise at once, so a wrong id or token is reported, not retried;
later ones count against `max_reconnects` (reset whenever the server sends bytes), each retried
after a doubling pause, and the last error is raised once the budget is spent. A 404 on a
reconnect means the session was deleted: the stream ends, as the server's own does after
`session_ended`. Model deltas are live-only: a reconnect does not replay them.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any, Generic, Protocol, TypeVar

from brain.client.errors import (
    BrainAPIError,
    ProtocolError,
    ServerError,
    TransportError,
    api_error,
)
from brain.client.shapes import Event, ModelDelta
from brain.net.sse import SseEvent, SseParser
from brain.protocol.records import SESSION_ENDED

END_KINDS = frozenset({SESSION_ENDED})
MAX_BACKOFF_SECS = 5.0
ITEM, STOP, CONNECT, READ = "item", "stop", "connect", "read"
"""What a stream does next (StreamState.next_step): hand over an item, stop, connect, read."""


class StreamState:
    """A stream's cursor, its pending items and its reconnect budget; no I/O."""

    def __init__(self, *, after: int, deltas: bool, max_reconnects: int,
                 backoff_secs: float) -> None:
        self.cursor = after
        self.deltas = deltas
        self.max_reconnects = max_reconnects
        self.backoff_secs = backoff_secs
        self.parser = SseParser()
        self.pending: deque[Event | ModelDelta] = deque()
        self.connected_once = False
        self.failures = 0
        self.last_error: BaseException | None = None
        self.ended = False
        self.closed = False
        self.reconnects = 0

    def next_step(self, connected: bool) -> str:
        """ITEM: hand over `pending[0]`; STOP: close and end the iteration (closed, or ended
        with nothing pending); CONNECT when no connection is open; READ from it otherwise."""
        if self.closed or (self.ended and not self.pending):
            return STOP
        if self.pending:
            return ITEM
        return READ if connected else CONNECT

    def pause_before_connect(self) -> float | None:
        """Seconds to wait before the next connection attempt (None for the first, or after
        the server last talked); raises the last error when `max_reconnects` failures in a row
        have spent the budget."""
        if not self.failures:
            return None
        if self.failures > self.max_reconnects:
            assert self.last_error is not None
            raise self.last_error
        return backoff_delay(self.failures, self.backoff_secs)

    def request(self) -> tuple[dict[str, int], dict[str, str]]:
        """The query and headers of the next connection."""
        headers = {"Accept": "text/event-stream"}
        if self.connected_once:
            headers["Last-Event-ID"] = str(self.cursor)
        return {"after": self.cursor}, headers

    def unreachable(self, error: TransportError) -> None:
        """The connection could not be made: raise on the first, count it on a reconnect."""
        if not self.connected_once:
            raise error
        self.fail(error)

    def refused(self, status: int, error: BrainAPIError) -> None:
        """The server answered `status` (not 200) with `error`: on a reconnect a 404 ends the
        stream and a server error counts as a failure; anything else is raised."""
        if self.connected_once and status == 404:
            self.ended = True  # deleted while we were away: the stream is over
            return
        if self.connected_once and isinstance(error, ServerError):
            self.fail(error)
            return
        raise error

    def answered(self, status: int, headers: dict[str, str], body: bytes) -> bool:
        """A connection attempt was answered `status` (`body`: a refusal's, else unread): True
        when the connection is now the stream's; else the caller closes it (and this raised the
        refusal, ended the stream or counted a failure)."""
        if status != 200:
            self.refused(status, api_error(status, body, headers))
            return False
        if self.closed:
            return False
        self.connected()
        return True

    def connected(self) -> None:
        """A connection answered 200 and is now the stream's."""
        self.parser = SseParser()
        if self.connected_once:
            self.reconnects += 1
        self.connected_once = True

    def fail(self, error: BaseException) -> None:
        self.failures += 1
        self.last_error = error

    def dropped(self, error: BaseException | None) -> None:
        """The connection ended (None: at EOF) after its resources were released."""
        if self.closed or self.ended:
            return
        self.fail(error or TransportError("the event stream ended before session_ended",
                                          maybe_applied=False))

    def feed(self, data: bytes) -> None:
        """Bytes from the server: what they complete is queued in `pending`. An `event: error`
        frame raises the server's error (the caller closes the stream: it was the server's
        last word, and a reconnect would be answered the same)."""
        self.failures = 0  # the server is talking: a later drop starts a fresh budget
        for message in self.parser.feed(data):
            item = decode_message(message, self.cursor, self.deltas)
            if item is None:
                continue
            if isinstance(item, Event):
                self.cursor = item.sequence
                if item.kind in END_KINDS:
                    self.ended = True
            self.pending.append(item)


class Opener(Protocol):
    def check_open(self) -> None: ...


TransportT = TypeVar("TransportT", bound=Opener)


class StreamBase(Generic[TransportT]):
    """What the sync and the asyncio stream hold alike: the transport, the path, the per-read
    timeout and the StreamState that decides everything."""

    def __init__(self, transport: TransportT, path: str, *, after: int = 0,
                 deltas: bool = False, timeout: float | None = None, max_reconnects: int = 5,
                 backoff_secs: float = 0.2) -> None:
        self._transport = transport
        self._path = path
        self._timeout = timeout
        self._state = StreamState(after=after, deltas=deltas, max_reconnects=max_reconnects,
                                  backoff_secs=backoff_secs)

    @property
    def cursor(self) -> int:
        """The sequence of the last committed Event delivered (or the starting cursor)."""
        return self._state.cursor

    @property
    def reconnects(self) -> int:
        """How many times the stream connected again after its first connection."""
        return self._state.reconnects

    def _first_connection_due(self) -> bool:
        """`connect()` opens the first connection, once, and only on an open client."""
        self._transport.check_open()
        return not self._state.closed and not self._state.connected_once


def decode_message(message: SseEvent, cursor: int, deltas: bool) -> Event | ModelDelta | None:
    """What one SSE message delivers to a stream at `cursor` (None: skip it). An `event: error`
    frame raises the server's error."""
    if message.event == "model_delta":
        if not deltas:
            return None
        body = _json(message.data)
        started = body.get("started") if isinstance(body, dict) else None
        delta = body.get("delta", "") if isinstance(body, dict) else ""
        return ModelDelta(started=started, delta=str(delta))
    if message.event == "error" and message.id is None:
        # The server found the session's journal damaged mid-stream: its last word, in the
        # contract's error body.
        raise api_error(500, message.data.encode(), {})
    if message.id is None:
        return None  # not a committed Event, and not a kind this SDK knows: ignore
    event = Event.from_json(_json(message.data))
    if event.sequence <= cursor:
        return None  # already delivered before a reconnect
    return event


def backoff_delay(failures: int, base_secs: float) -> float:
    """The pause before reconnect attempt number `failures` (1, 2, ...): doubling, capped."""
    return min(MAX_BACKOFF_SECS, base_secs * 2 ** (failures - 1))


def _json(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ProtocolError(f"SSE data is not JSON: {data[:200]!r}") from exc
