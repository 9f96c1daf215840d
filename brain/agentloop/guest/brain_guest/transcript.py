"""The saved conversation: read it, grow it, replace it (Brain stores only what changed).

    conversation = transcript.read()
    conversation.append(turn.user_message())
    transcript.set(conversation)          # or model.call(conversation)

`Transcript.messages` is the whole conversation as a plain list, decoded on first use. To edit
earlier messages, change that list and pass the list: `transcript.set(messages)`.
"""

from __future__ import annotations

import json
from typing import Any

from brain_guest._echo import dumps, echo
from brain_guest._host import answer_text, call_text
from brain_guest.errors import GuestCallError

Messages = list[dict[str, Any]]


class Transcript:
    """The conversation as Brain holds it, plus what this turn appended."""

    def __init__(self, array_text: str, through_sequence: int) -> None:
        self.through_sequence = through_sequence
        self._read_text = array_text  # the array as read, with its brackets
        self._read: Messages | None = None  # decoded on first use
        self._added: Messages = []
        self._synced_text = array_text[:-1] if array_text != "[]" else ""
        self._synced = 0  # how many of `_added` Brain's text `_synced_text` includes

    @property
    def messages(self) -> Messages:
        """Every message, read and appended, as a new list (decoded once)."""
        if self._read is None:
            self._read = json.loads(self._read_text)
        return self._read + self._added

    def append(self, message: dict[str, Any]) -> None:
        """Add a message at the end (sent with the next `transcript.set` or `model.call`)."""
        self._added.append(message)

    def __len__(self) -> int:
        return len(self.messages)

    def _request(self, op: str, extra: dict[str, Any]) -> str:
        if self._synced_text and echo.text == self._synced_text:
            request = echo.send_grown(op, self._added[self._synced:], extra)
        else:
            array = dumps(self.messages)
            request = echo.send_whole(op, array, extra)
            if echo.text != array[:-1]:
                return request  # Brain holds some other text: the next send is whole too
        self._synced_text, self._synced = echo.text, len(self._added)
        return request


def read() -> Transcript:
    """The saved conversation and the journal sequence it reflects."""
    array, rest = echo.read_answer(answer_text('{"op":"transcript.read"}'))
    if isinstance(rest.get("error"), dict):
        error = rest["error"]
        raise GuestCallError("transcript.read", str(error.get("code", "internal")),
                             str(error.get("message", "")))
    return Transcript(array, int(rest.get("through_sequence", 0)))


def request_text(op: str, messages: Transcript | Messages, extra: dict[str, Any]) -> str:
    """The request text for `op` carrying `messages` (a Transcript or a list) first."""
    if isinstance(messages, Transcript):
        return messages._request(op, extra)
    return echo.send_list(op, list(messages), extra)


def set(messages: Transcript | Messages) -> int | None:  # noqa: A001 - the op's own name
    """Replace the saved conversation; the sequence committed, or None when nothing changed."""
    return call_text("transcript.set", request_text("transcript.set", messages, {})) \
        .get("sequence")
