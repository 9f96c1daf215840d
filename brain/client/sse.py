"""Server-Sent Events framing: turns lines of a text/event-stream body into messages.

Kept apart from the connection handling so the parsing rules (from the HTML Living Standard's
event-stream interpretation) can be tested without a socket. Brain sends `id`, `event` and one
`data` line per frame and comment lines as keep-alives, but the parser accepts the whole format:
several `data` lines joined by newlines, CR/LF/CRLF line ends, a single optional space after the
colon, and unknown fields ignored.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SseMessage:
    """One dispatched message; `id` is set only when this message carried an `id` field."""

    event: str
    data: str
    id: str | None


class SseParser:
    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._has_data = False

    def feed(self, raw: bytes) -> list[SseMessage]:
        """Consume one line as read from the stream (its terminator included or not)."""
        text = raw.decode("utf-8", "replace")
        if text.endswith("\n"):
            text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
        messages = []
        for line in text.split("\r"):  # a bare CR also ends a line
            message = self._line(line)
            if message is not None:
                messages.append(message)
        return messages

    def _line(self, line: str) -> SseMessage | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment: keep-alive
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "id" and "\0" not in value:
            self._id = value
        return None

    def _dispatch(self) -> SseMessage | None:
        message = None
        if self._has_data:
            message = SseMessage(event=self._event or "message", data="\n".join(self._data),
                                 id=self._id)
        self._event, self._data, self._id, self._has_data = "", [], None, False
        return message
