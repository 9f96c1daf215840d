"""Following a session live over SSE, surviving dropped connections.

The stream owns its cursor: the sequence of the last committed Event it delivered. When the
connection drops (EOF before session_ended, a reset, or no bytes within the stream timeout,
which is longer than the server's 15 s keep-alive comments), it reconnects with `Last-Event-ID:
<cursor>`, so the server resumes after the last delivered Event and nothing committed is lost or
repeated. The rules of cursor, reconnects and their budget are brain/client/stream_state.py's,
shared with the asyncio stream; this module does the blocking reads.
"""

from __future__ import annotations

import http.client
import threading
from typing import Any

from brain.client.errors import BrainAPIError, TransportError
from brain.client.shapes import Event, ModelDelta
from brain.client.stream_state import CONNECT, ITEM, STOP, StreamBase
from brain.client.transport import StreamConnection, Transport


class EventStream(StreamBase[Transport]):
    """An iterator of Event (and ModelDelta when asked); use as a context manager or close()."""

    def __init__(self, transport: Transport, path: str, **options: Any) -> None:
        super().__init__(transport, path, **options)
        self._conn: StreamConnection | None = None
        self._wake = threading.Event()

    def connect(self) -> EventStream:
        """Open the stream now: when this returns the server has subscribed it, so live model
        deltas of a turn submitted afterwards reach it (they are never replayed)."""
        if self._first_connection_due():
            self._connect()
        return self

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> Event | ModelDelta:
        state = self._state
        while True:
            self._transport.check_open()
            step = state.next_step(connected=self._conn is not None)
            if step == ITEM:
                return state.pending.popleft()
            if step == STOP:
                self.close()
                raise StopIteration
            if step == CONNECT:
                self._connect()
                continue
            try:
                line = self._conn.readline()  # type: ignore[union-attr]
            except Exception as exc:
                if state.closed:
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
            try:
                state.feed(line)
            except BrainAPIError:
                self.close()  # the server's last word: reconnecting would be answered 500 again
                raise

    def close(self) -> None:
        """Idempotent and safe from another thread; a blocked iteration then stops."""
        self._state.closed = True
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
        state = self._state
        pause = state.pause_before_connect()
        if pause is not None:
            self._wake.wait(pause)
            if state.closed:
                return
            self._transport.check_open()
        query, headers = state.request()
        try:
            conn = self._transport.open_stream(self._path, query=query, headers=headers,
                                               timeout=self._timeout)
        except TransportError as exc:
            state.unreachable(exc)
            return
        keep = False
        try:
            keep = state.answered(conn.status, conn.headers,
                                  conn.read_all() if conn.status != 200 else b"")
        finally:
            if keep:
                self._conn = conn
            else:
                conn.close()

    def _drop(self, error: BaseException | None) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        self._transport.check_open()
        self._state.dropped(error)
