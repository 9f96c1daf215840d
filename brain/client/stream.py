"""Following a session live over SSE, surviving dropped connections.

The stream owns its cursor: the sequence of the last committed Event it delivered. When the
connection drops (EOF before session_ended, a reset, or no bytes within the stream timeout,
which is longer than the server's 15 s keep-alive comments), it reconnects with `Last-Event-ID:
<cursor>`, so the server resumes after the last delivered Event and nothing committed is lost or
repeated (sequences at or below the cursor are also skipped defensively). Model deltas are
live-only: a reconnect does not replay them, and the committed model_call_ended carries the full
result.

Failures of the first connection raise at once so a wrong id or token is reported, not retried.
Later failures are retried with exponential backoff; `max_reconnects` consecutive failures raise
the last error. A 404 on reconnect means the session was deleted, which ends the stream, as the
server's own stream ends after session_ended or deletion.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections import deque
from typing import Any

from brain.client.errors import (
    BrainAPIError,
    ProtocolError,
    ServerError,
    TransportError,
    api_error,
)
from brain.client.shapes import Event, ModelDelta
from brain.client.transport import StreamConnection, Transport
from brain.net.sse import SseEvent, SseParser

END_KINDS = frozenset({"session_ended"})
MAX_BACKOFF_SECS = 5.0


class EventStream:
    """An iterator of Event (and ModelDelta when asked); use as a context manager or close()."""

    def __init__(self, transport: Transport, path: str, *, after: int = 0, deltas: bool = False,
                 timeout: float | None = None, max_reconnects: int = 5,
                 backoff_secs: float = 0.2) -> None:
        self._transport = transport
        self._path = path
        self._cursor = after
        self._deltas = deltas
        self._timeout = timeout
        self._max_reconnects = max_reconnects
        self._backoff_secs = backoff_secs
        self._conn: StreamConnection | None = None
        self._parser = SseParser()
        self._pending: deque[Event | ModelDelta] = deque()
        self._connected_once = False
        self._failures = 0
        self._last_error: BaseException | None = None
        self._ended = False
        self._closed = False
        self._wake = threading.Event()
        self.reconnects = 0

    def connect(self) -> EventStream:
        """Open the stream now: when this returns the server has subscribed it, so live model
        deltas of a turn submitted afterwards reach it (they are never replayed)."""
        self._transport.check_open()
        if self._conn is None and not self._closed and not self._connected_once:
            self._connect()
        return self

    @property
    def cursor(self) -> int:
        """The sequence of the last committed Event delivered (or the starting cursor)."""
        return self._cursor

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> Event | ModelDelta:
        while True:
            self._transport.check_open()
            if self._closed:
                raise StopIteration
            if self._pending:
                return self._pending.popleft()
            if self._ended:
                self.close()
                raise StopIteration
            if self._conn is None:
                self._connect()
                continue
            try:
                line = self._conn.readline()
            except Exception as exc:
                if self._closed:
                    # close() from another thread shut the connection under this read;
                    # http.client then fails in its own ways (even AttributeError).
                    raise StopIteration from None
                if not isinstance(exc, (OSError, ValueError, http.client.HTTPException)):
                    raise
                self._drop(exc)
                continue
            if not line:
                self._drop(None)
                continue
            self._failures = 0  # the server is talking: a later drop starts a fresh budget
            for message in self._parser.feed(line):
                self._accept(message)

    def close(self) -> None:
        """Idempotent and safe from another thread; a blocked iteration then stops."""
        self._closed = True
        self._wake.set()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # --- internals --------------------------------------------------------------------------

    def _connect(self) -> None:
        if self._failures:
            if self._failures > self._max_reconnects:
                assert self._last_error is not None
                raise self._last_error
            self._wake.wait(backoff_delay(self._failures, self._backoff_secs))
            if self._closed:
                return
            self._transport.check_open()
        headers = {"Accept": "text/event-stream"}
        if self._connected_once:
            headers["Last-Event-ID"] = str(self._cursor)
        try:
            conn = self._transport.open_stream(self._path, query={"after": self._cursor},
                                               headers=headers, timeout=self._timeout)
        except TransportError as exc:
            if not self._connected_once:
                raise
            self._fail(exc)
            return
        if conn.status != 200:
            body = conn.read_all()
            conn.close()
            error = api_error(conn.status, body, conn.headers)
            if self._connected_once and conn.status == 404:
                self._ended = True  # deleted while we were away: the stream is over
                return
            if self._connected_once and isinstance(error, ServerError):
                self._fail(error)
                return
            raise error
        if self._closed:
            conn.close()
            return
        self._conn = conn
        self._parser = SseParser()
        if self._connected_once:
            self.reconnects += 1
        self._connected_once = True

    def _fail(self, error: BaseException) -> None:
        self._failures += 1
        self._last_error = error

    def _drop(self, error: BaseException | None) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        self._transport.check_open()
        if self._closed or self._ended:
            return
        self._fail(error or TransportError("the event stream ended before session_ended",
                                           maybe_applied=False))

    def _accept(self, message: SseEvent) -> None:
        try:
            item = decode_message(message, self._cursor, self._deltas)
        except BrainAPIError:
            self.close()  # the server's last word: reconnecting would be answered 500 again
            raise
        if item is None:
            return
        if isinstance(item, Event):
            self._cursor = item.sequence
            if item.kind in END_KINDS:
                self._ended = True
        self._pending.append(item)

def decode_message(message: SseEvent, cursor: int, deltas: bool) -> Event | ModelDelta | None:
    """What one SSE message delivers to a stream at `cursor` (None: skip it); pure, so the
    sync and asyncio streams share it. An `event: error` frame raises the server's error."""
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
