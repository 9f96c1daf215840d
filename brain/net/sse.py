"""An incremental `text/event-stream` parser, fed whatever bytes arrive.

Every reader of Server-Sent Events in Brain uses it: the model providers (their streamed answers)
and the Python SDK (a session's event stream). It follows the event-stream interpretation of the
HTML Living Standard: lines end in LF, CRLF or a bare CR (also when a CRLF is split between two
reads); one optional space after the colon is dropped; `data` lines of one event are joined with
LF; comment lines (`:`, keep-alives) and unknown fields are ignored; a blank line dispatches the
event if it has data. Unlike a browser, an event's `id` is reported only on the event that
carried it, because the SDK resumes from the last *committed* sequence it delivered.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event: its `event` name ("message" when absent), joined `data`, its `id`."""

    event: str
    data: str
    id: str | None = None


class SseParser:
    """Feed raw body bytes in pieces of any size; get back the events completed so far."""

    def __init__(self) -> None:
        self._rest = b""
        self._skip_lf = False  # the last piece ended in CR: a leading LF belongs to that CRLF
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if not chunk:
            return []
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        events: list[SseEvent] = []
        lines = (self._rest + chunk).splitlines(keepends=True)  # bytes split on LF, CR, CRLF only
        self._rest = b""
        if lines and not lines[-1].endswith((b"\n", b"\r")):
            self._rest = lines.pop()
        if lines and lines[-1].endswith(b"\r"):
            self._skip_lf = True
        for raw in lines:
            event = self._line(raw.rstrip(b"\r\n").decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        return events

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._id = value
        return None

    def _dispatch(self) -> SseEvent | None:
        event = None
        if self._data:
            event = SseEvent(self._event or "message", "\n".join(self._data), self._id)
        self._event, self._data, self._id = "", [], None
        return event
