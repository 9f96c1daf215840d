"""GET events (JSON pages) and transcript, read from the journal without an actor."""

from __future__ import annotations

import falcon

from brain import errors
from brain.journal import CorruptJournal, SessionReader
from brain.settings import Settings
from brain.web.contract import MAX_SEQUENCE, READ_ERRORS, Answer, operation
from brain.web.live_hub import LiveHub
from brain.web.reads import damaged_error, reader, session_dir
from brain.web.schema import Schema
from brain.web.shapes import SEQUENCE, TIMESTAMP
from brain.web.sse import open_stream

MAX_PAGE_EVENTS = 1000

ORIGIN = Schema("Origin", {
    "type": "object",
    "required": ["kind", "sequence"],
    "properties": {"kind": {"type": "string", "enum": ["agentloop", "tool"]}, "sequence": SEQUENCE},
}, "origin")

EVENT = Schema("Event", {
    "type": "object",
    "required": ["sequence", "kind", "at", "data"],
    "properties": {
        "sequence": SEQUENCE,
        "kind": {"type": "string"},
        "at": TIMESTAMP,
        "data": {"description": "The record's fields (any JSON)."},
        "origin": ORIGIN,
    },
}, "event")

PAGE = Schema("Page", {
    "type": "object",
    "required": ["events", "next_after", "has_more"],
    "properties": {
        "events": {"type": "array", "items": EVENT, "maxItems": MAX_PAGE_EVENTS},
        "next_after": {"type": "integer", "minimum": 0, "maximum": MAX_SEQUENCE},
        "has_more": {"type": "boolean"},
    },
}, "page")

TRANSCRIPT = Schema("Transcript", {
    "type": "object",
    "required": ["messages", "through_sequence"],
    "properties": {
        "messages": {"type": "array", "items": {"type": "object"}},
        "through_sequence": {"type": "integer", "minimum": 0},
    },
}, "transcript")

EVENTS_ANSWER = Answer(
    "A Page; or, with `Accept: text/event-stream`, a stream of `id: <sequence>` / "
    "`event: <kind>` / `data: <Event JSON>` frames, plus id-less `model_delta` frames and "
    "keep-alive comments.",
    PAGE, content={"text/event-stream": {"schema": {"type": "string"}}})


def sequence_header(raw: str) -> int:
    """Last-Event-ID as a sequence: ASCII digits only (str.isdigit also admits '²')."""
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19) or int(raw) > MAX_SEQUENCE:
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

    @operation("listEvents", "Read committed Events as a page, or follow them as SSE",
               {200: EVENTS_ANSWER}, errors=READ_ERRORS, headers=("Last-Event-ID",), query={
                   "after": {"type": "integer", "minimum": 0, "maximum": MAX_SEQUENCE,
                             "default": 0,
                             "description": "Exclusive cursor: Events with a greater sequence."},
                   "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_EVENTS,
                             "default": MAX_PAGE_EVENTS},
               })
    def on_get(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        session_reader = reader(self.settings, session_id)
        after, limit = req.context.query["after"], req.context.query["limit"]
        last_event_id = req.get_header("Last-Event-ID")
        if last_event_id is not None:
            after = sequence_header(last_event_id.strip())
        if wants_event_stream(req):
            self._stream(req, resp, session_reader, session_id, after)
            return
        try:
            resp.media = session_reader.events_page(after, limit)
        except CorruptJournal as refused:
            raise damaged_error(self.settings.data_path, session_id, refused) from None

    def _stream(self, req: falcon.Request, resp: falcon.Response, session_reader: SessionReader,
                session_id: str, after: int) -> None:
        """Answer with an event stream, or with 500 session_damaged while nothing is sent yet.

        A session whose status reads `damaged` is refused as its JSON pages are; so is one
        whose journal is refused before the catch-up reaches its first Event. Damage found
        later ends the stream with an `error` frame (brain/web/sse.py).
        """
        refused = session_reader.damage()
        if refused is not None:
            raise damaged_error(self.settings.data_path, session_id, refused)
        try:
            stream = open_stream(session_reader, session_dir(self.settings, session_id),
                                 self.hub, session_id, after, req.context.request_id)
        except CorruptJournal as refused:
            raise damaged_error(self.settings.data_path, session_id, refused) from None
        resp.content_type = "text/event-stream"
        resp.set_header("Cache-Control", "no-cache")
        resp.set_header("X-Accel-Buffering", "no")
        resp.stream = stream


class TranscriptResource:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @operation("getTranscript", "Read the canonical transcript (never activates)",
               {200: Answer("The transcript", TRANSCRIPT)}, errors=READ_ERRORS)
    def on_get(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        session_reader = reader(self.settings, session_id)
        try:
            resp.media = session_reader.transcript()
        except CorruptJournal as refused:
            raise damaged_error(self.settings.data_path, session_id, refused) from None
