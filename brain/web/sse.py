"""Server-Sent Events for one session: catch up from the journal, then follow new commits.

Frames: committed Events as `id: <sequence>` / `event: <kind>` / `data: <Event JSON>`; live model
deltas as `event: model_delta` with `data: {started, delta}` and no id, and an MCP Tool call's
progress as `event: tool_progress` with `data: {started, progress, total, message}` and no id;
a comment every 15 s
keeps idle streams open and lets the server notice a closed client. The stream ends after
`session_ended` or when the session is deleted.

A refused journal (CorruptJournal) is an error answer while nothing has been sent:
`open_stream` reads the catch-up up to its first Event before the response starts, so damage
there raises to the caller, which answers 500 session_damaged. Damage found after the stream
started can no longer change the status line: the stream then ends with one
`event: error` frame carrying the contract's error body (no id; `error` is reserved, so no
committed Event has that kind), and a reconnect gets the 500.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from brain import errors
from brain.journal import CorruptJournal
from brain.protocol.records import SESSION_ENDED
from brain.web.errors import error_body
from brain.web.live_hub import LiveHub, Subscription
from brain.web.reads import damaged_error
from brain.web.session_tail import EFFECT_TERMINALS, SessionTail, tail_event

log = logging.getLogger(__name__)

KEEPALIVE_SECS = 15.0
TERMINAL_KINDS = frozenset({SESSION_ENDED})


def delta_frame(delta: dict[str, Any]) -> bytes:
    data = json.dumps({"started": delta.get("started"), "delta": delta.get("delta", "")},
                      separators=(",", ":"))
    return f"event: model_delta\ndata: {data}\n\n".encode()


def progress_frame(progress: dict[str, Any]) -> bytes:
    data = json.dumps({key: progress.get(key) for key in PROGRESS_FIELDS}, separators=(",", ":"))
    return f"event: tool_progress\ndata: {data}\n\n".encode()


PROGRESS_FIELDS = ("started", "progress", "total", "message")


def error_frame(error: errors.BrainError, request_id: str) -> bytes:
    data = error_body(error.code, error.message, request_id)
    return f"event: error\ndata: {data}\n\n".encode()


class EventStream:
    """One subscriber's response body: its frames, and a `close` that ends the subscription.

    The WSGI server calls `close` when the body ends or the client goes, even if it never
    iterated (a generator that never started would skip its own `finally`).
    """

    def __init__(self, frames: Generator[bytes, None, None], release: Callable[[], None]) -> None:
        self._frames = frames
        self._release = release

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> bytes:
        return next(self._frames)

    def close(self) -> None:
        try:
            self._frames.close()
        finally:
            self._release()


def open_stream(reader: Any, session_dir: Path, hub: LiveHub, session_id: str, after: int,
                request_id: str, keepalive_secs: float = KEEPALIVE_SECS) -> EventStream:
    """Subscribe, then catch up to the first Event now, before any byte is sent.

    Raises CorruptJournal when that first read is refused, so the caller can still answer
    500; damage found later ends the stream with an error frame (see `_until_damaged`).
    """
    subscription = hub.subscribe(session_id)  # before catching up, so no hint is missed
    try:
        state = _FollowState(reader, after, hub.tail(session_id))
        catch_up = state.read(through=None)
        first = list(itertools.islice(catch_up, 1))
    except BaseException:
        hub.unsubscribe(subscription)
        raise
    frames = _frames(itertools.chain(first, catch_up), state, subscription, session_dir,
                     keepalive_secs)
    return EventStream(_until_damaged(frames, session_dir, session_id, request_id),
                       lambda: hub.unsubscribe(subscription))


def _until_damaged(frames: Iterator[bytes], session_dir: Path, session_id: str,
                   request_id: str) -> Generator[bytes, None, None]:
    """Pass frames on; a journal refused mid-stream ends the stream with an error frame.

    The 200 is already sent, so the client learns it from the frame, with the same detail as
    a page's 500; no traceback is logged (the damage is reported, not a server fault) and the
    WSGI server sees a normal end. `session_dir` is `<data dir>/sessions/<id>`.
    """
    try:
        yield from frames
    except CorruptJournal as damage:
        error = damaged_error(session_dir.parent.parent, session_id, damage)
        log.warning("session %s: journal refused while streaming, stream ended", session_id)
        yield error_frame(error, request_id)


def _frames(catch_up: Iterator[bytes], state: _FollowState, subscription: Subscription,
            session_dir: Path, keepalive_secs: float) -> Iterator[bytes]:
    """The stream: the opening comment, the catch-up, then new commits as hints arrive."""
    yield b": stream open\n\n"
    yield from catch_up
    while not state.ended and (session_dir / "journal").is_dir():
        woken = subscription.wait(keepalive_secs)
        items = subscription.take()
        lagging = len(items) > LAGGING_ITEMS
        for index, (kind, value) in enumerate(items):
            if kind == "delta":
                # A subscriber this far behind gets committed results, not stale previews.
                if not lagging and value.get("started") not in state.finished_calls:
                    yield delta_frame(value)
            elif kind == "progress":
                if not lagging and value.get("started") not in state.finished_calls:
                    yield progress_frame(value)
            elif value > state.cursor and not _commit_follows(items, index):
                yield from state.read(through=value)
        if not woken:
            # Silence: re-read everything (a lost hint costs at most this delay).
            yield from state.read(through=None)
            yield b": keep-alive\n\n"


LAGGING_ITEMS = 256


def _commit_follows(items: list[tuple[str, Any]], index: int) -> bool:
    """True when the next item is also a commit hint: read once, through the later one."""
    return index + 1 < len(items) and items[index + 1][0] == "commit"


class _FollowState:
    """A subscriber's position, advanced only by committed Events it has delivered.

    The catch-up reads the journal with the subscriber's own follower; after it, new commits
    come from the session's shared tail in this worker (read once for every stream), unless the
    subscriber is further behind than the tail reaches.
    """

    def __init__(self, reader: Any, after: int, tail: SessionTail | None) -> None:
        self.reader = reader
        self.position = after  # the journal sequence this subscriber has read through
        self.follower: Any = reader.follower(after)  # its own reader; None once stale
        self.tail = tail
        self.caught_up = False
        self.finished_calls: set[int] = set()
        self.ended = False

    @property
    def cursor(self) -> int:
        return self.position

    def read(self, through: int | None) -> Iterator[bytes]:
        """Committed Events after the cursor, up to `through` when a hint bounds them."""
        if self.caught_up and self.tail is not None:
            shared = self.tail.read(self.position, through, self.reader.follower)
            if shared is not None:
                events, covered = shared
                self.follower = None  # it no longer knows where this subscriber is
                for event in events:
                    self.position = event.sequence
                    yield event.frame
                    if self._delivered(event.kind, event.started):
                        return
                self.position = max(self.position, covered)
                return
        if self.follower is None:
            self.follower = self.reader.follower(self.position)
        for event in self.follower.read(through):
            self.position = self.follower.after
            held = tail_event(event)
            yield held.frame
            if self._delivered(held.kind, held.started):
                return
        self.position = self.follower.after
        if through is None:
            self.caught_up = True  # at the journal's end once: the shared tail can serve now

    def _delivered(self, kind: str, started: Any) -> bool:
        """Note a delivered Event; True when it ends the stream."""
        if kind in EFFECT_TERMINALS:
            self.finished_calls.add(started)
        if kind in TERMINAL_KINDS:
            self.ended = True
        return self.ended
