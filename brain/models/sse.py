"""An incremental parser for `text/event-stream` bodies, fed whatever bytes the socket gives.

Both provider families stream Server-Sent Events; this is the one place that knows the line
format, so the providers see whole events and never partial lines.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event: its `event:` name ("message" when absent) and joined `data:`."""

    event: str
    data: str


class SseParser:
    """Feed raw body bytes; get back the events completed so far.

    Lines end in LF or CRLF. `data:` lines of one event are joined with LF, comment lines (`:`)
    and `id:`/`retry:` fields are ignored, and a blank line dispatches the event if it has data.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SseEvent]:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        events: list[SseEvent] = []
        for raw in lines:
            line = raw.removesuffix(b"\r").decode("utf-8", errors="replace")
            if not line:
                if self._data:
                    events.append(SseEvent(self._event or "message", "\n".join(self._data)))
                self._event, self._data = "", []
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                self._data.append(value)
            elif field == "event":
                self._event = value
        return events
