"""GET events (JSON pages) and transcript, read from the journal without an actor."""

from __future__ import annotations

import falcon

from brain import errors
from brain.journal import CorruptJournal, SessionReader
from brain.settings import Settings
from brain.web.live_hub import LiveHub
from brain.web.reads import damaged_error, reader, session_dir
from brain.web.sse import open_stream

MAX_PAGE_EVENTS = 1000


def int_param(req: falcon.Request, name: str, default: int, low: int, high: int) -> int:
    raw = req.get_param(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise errors.InvalidRequest(f"{name}: expected an integer") from None
    if not low <= value <= high:
        raise errors.InvalidRequest(f"{name}: must be between {low} and {high}")
    return value


def sequence_header(raw: str) -> int:
    """Last-Event-ID as a sequence: ASCII digits only (str.isdigit also admits '²')."""
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19) or int(raw) > 2**63 - 1:
        raise errors.InvalidRequest("Last-Event-ID: expected a sequence number")
    return int(raw)


def wants_event_stream(req: falcon.Request) -> bool:
    accept = req.get_header("Accept") or ""
    return any(part.split(";")[0].strip().lower() == "text/event-stream"
               for part in accept.split(","))


class EventsResource:
    def __init__(self, settings: Settings, hub: LiveHub) -> None:
        self.settings = settings
        self.hub = hub

    def on_get(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        session_reader = reader(self.settings, session_id)
        after = int_param(req, "after", 0, 0, 2**63 - 1)
        last_event_id = req.get_header("Last-Event-ID")
        if last_event_id is not None:
            after = sequence_header(last_event_id.strip())
        limit = int_param(req, "limit", MAX_PAGE_EVENTS, 1, MAX_PAGE_EVENTS)
        if wants_event_stream(req):
            self._stream(req, resp, session_reader, session_id, after)
            return
        try:
            resp.media = session_reader.events_page(after, limit)
        except CorruptJournal:
            raise damaged_error() from None

    def _stream(self, req: falcon.Request, resp: falcon.Response, session_reader: SessionReader,
                session_id: str, after: int) -> None:
        """Answer with an event stream, or with 500 session_damaged while nothing is sent yet.

        A session whose status reads `damaged` is refused as its JSON pages are; so is one
        whose journal is refused before the catch-up reaches its first Event. Damage found
        later ends the stream with an `error` frame (brain/web/sse.py).
        """
        if session_reader.damage() is not None:
            raise damaged_error()
        try:
            stream = open_stream(session_reader, session_dir(self.settings, session_id),
                                 self.hub, session_id, after, req.context.request_id)
        except CorruptJournal:
            raise damaged_error() from None
        resp.content_type = "text/event-stream"
        resp.set_header("Cache-Control", "no-cache")
        resp.set_header("X-Accel-Buffering", "no")
        resp.stream = stream


class TranscriptResource:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def on_get(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        session_reader = reader(self.settings, session_id)
        try:
            resp.media = session_reader.transcript()
        except CorruptJournal:
            raise damaged_error() from None
