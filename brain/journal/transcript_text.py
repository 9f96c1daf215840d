"""A transcript that remembers the JSON text of its saved messages.

Every turn of a released session opens its journal again and hands the whole transcript to the
Agentloop as JSON (`transcript.read`). Encoding hundreds of messages again at every turn made a
turn's cost grow with the conversation. The checkpoint therefore keeps the transcript as that
JSON text, and a projection loaded from it holds a `TranscriptList`: the decoded messages, as
any list, plus the text of its first messages (`encoded`). Encoding it for a guest, or for the
next checkpoint, then costs only the messages added since. A list the transcript echo builds
from a guest's request carries the guest's own text the same way, which a model call sends
instead of the messages (`MessagesText`).

The text is only a cache of the list: it is trusted because Brain wrote it (the checkpoint is
checksummed), and any change that reaches into the encoded messages drops it. The transcript is
JSON by contract (it arrives as JSON over HTTP, from guests, and from providers), so decoding
the text gives back the same messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class TranscriptList(list):
    """A list of messages, and the JSON array text of its first `encoded[0]` items.

    Treat it as read-only, as every projection container. `copy()` keeps the text, for a
    projection builder that changes its own copy (it calls `forget_text` before reaching into
    the encoded messages); `list(...)`, slicing and pickling give a plain list. The count and
    text are one attribute, so a reader on another thread never sees one without the other.
    """

    __slots__ = ("_encoded",)

    def __init__(self, messages: Any = (), encoded: tuple[int, str] = (0, "")) -> None:
        super().__init__(messages)
        self._encoded = encoded

    @property
    def encoded(self) -> tuple[int, str]:
        """`(count, text)`: the text is `"[m1,...,mcount"` (no closing bracket)."""
        return self._encoded

    def remember(self, text: str) -> None:
        """Remember `text`, the JSON array of all of these messages, for later encodes."""
        if not text.endswith("]"):
            raise ValueError("not the text of a JSON array")
        self._encoded = (len(self), text[:-1]) if len(self) else (0, "")

    def forget_text(self) -> None:
        self._encoded = (0, "")

    def copy(self) -> TranscriptList:
        return TranscriptList(self, self._encoded)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return list, (list(self),)  # a pickled copy (a model call's messages) is a plain list


def json_text(value: Any) -> str:
    """Compact JSON that has a UTF-8 form, the Agentloop ABI's encoding (`abi.encode` is this,
    as UTF-8): text with lone surrogates goes out escaped. Raises ValueError or TypeError on a
    value JSON cannot hold."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text


def messages_text(messages: list[Any]) -> str:
    """The JSON array of `messages`, reusing the text a TranscriptList remembers."""
    count, head = messages.encoded if isinstance(messages, TranscriptList) else (0, "")
    if not count or len(messages) < count:
        return json_text(messages)
    if len(messages) == count:
        return head + "]"
    return head + "," + json_text(messages[count:])[1:]


def decode_messages(text: str) -> TranscriptList:
    """The messages of a JSON array text, remembering it."""
    messages = json.loads(text)
    if not isinstance(messages, list):
        raise ValueError("the transcript text is not a JSON array")
    transcript = TranscriptList(messages)
    transcript.remember(text)
    return transcript


@dataclass(frozen=True)
class MessagesText:
    """A messages array travelling as its JSON text (`"[...]"`), as the Agentloop wrote it.

    Pickling hundreds of decoded messages for the model executor, and unpickling them there,
    grew with the conversation; text pickles as one string, and the executor decodes only what
    it has not seen (brain/actors/executors/messages_cache.py)."""

    text: str


def portable(messages: list[Any]) -> list[Any] | MessagesText:
    """`messages` as MessagesText when their whole JSON text is known, else as they are."""
    if isinstance(messages, TranscriptList):
        count, head = messages.encoded
        if count and count == len(messages):
            return MessagesText(head + "]")
    return messages
