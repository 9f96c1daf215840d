"""Decode a guest's transcript without decoding again what Brain itself just encoded for it.

A guest reads the transcript (`transcript.read`), appends to it and hands the whole list back,
with `transcript.set {messages}` and `model.call {messages}`, several times a turn. Decoding the
whole list each time made a turn's cost grow with the conversation: at a few hundred turns the
JSON of the guest calls was most of a turn.

Most guests (the default Agentloop among them) keep the bytes they were given and append to
them. So each activation remembers the JSON text of the messages array it last saw whole, as
the text the guest can echo, and the decoded list. A request that starts with the op, then that
text, then `,` or `]`, is decoded with the echoed part replaced by a one-character placeholder,
and the placeholder by the remembered messages: the result is exactly what decoding the whole
request gives (the echoed text is a run of complete array items, and JSON decoding is
deterministic), at the cost of the new part alone. Anything else (another op, other bytes,
whitespace, a guest that re-serializes) is decoded whole, as before.

The placeholder is `NaN`, which strict decoding refuses everywhere: the first constant the
decoder meets is necessarily the placeholder (it comes before any byte of the guest's own), and
any later one is the guest's and is refused as before. If the request names `messages` twice,
the last one wins in JSON; then the placeholder is not where it was put and the request is
decoded whole. A whole decode that teaches the echo (after an empty transcript) remembers the
first array's text with what that text decodes to, which is not what won in such a request.
"""

from __future__ import annotations

import json
from typing import Any

from brain.agentloop import abi
from brain.journal.transcript_text import TranscriptList, messages_text

ECHOING_OPS = ("transcript.set", "model.call")
_HEADS = {op: f'{{"op":"{op}","messages":' for op in ECHOING_OPS}


class _Placeholder:
    """Stands for the remembered messages inside a spliced request."""


PLACEHOLDER = _Placeholder()


class TranscriptEcho:
    """One activation's memory of the messages array it last saw, as text and as objects."""

    def __init__(self) -> None:
        self._text = ""  # "[m1,...,mk" with no closing bracket; "" when nothing is known
        self._messages: list[Any] = []
        self._learned_whole = False  # a whole decode is scanned for its array once at most

    def encode_result(self, result: dict[str, Any]) -> bytes:
        """A guest call's result, remembering a `messages` array it hands to the guest."""
        messages = result.get("messages")
        if not isinstance(messages, list) or not messages or next(iter(result)) != "messages":
            return abi.encode(result)
        array = messages_text(messages)  # only what was added since the checkpoint is encoded
        rest = abi.encode({k: v for k, v in result.items() if k != "messages"}).decode("utf-8")
        self._text, self._messages = array[:-1], messages
        tail = "}" if rest == "{}" else "," + rest[1:]
        return ('{"messages":' + array + tail).encode("utf-8")

    def decode_request(self, raw: bytes) -> Any:
        """What `abi.decode(raw)` gives, decoding only what the guest added to the echo."""
        text = raw.decode("utf-8")
        request = self._spliced(text)
        if request is None:
            request = abi.decode(raw)
            self._remember_whole(text, request)
        return request

    def _spliced(self, text: str) -> Any:
        known = self._text
        if not known:
            return None
        for head in _HEADS.values():
            after = len(head) + len(known)
            if text.startswith(head) and text.startswith(known, len(head)) \
                    and text[after:after + 1] in (",", "]"):
                break
        else:
            return None
        spliced = head + "[NaN" + text[after:]
        request = json.loads(spliced, parse_constant=_first_nan_is_placeholder())
        messages = request.get("messages") if isinstance(request, dict) else None
        if not isinstance(messages, list) or not messages or messages[0] is not PLACEHOLDER:
            return None  # `messages` twice: the guest's own won; decode the request whole
        added = messages[1:]
        # The array's text as the guest sent it: the echo, then what it added. The list keeps
        # it, so a model call can send the text rather than pickle the messages.
        end = _array_end(spliced, len(head))
        if end is None:
            request["messages"] = self._messages + added
            return request
        self._text = known + spliced[len(head) + 4:end - 1]
        whole = TranscriptList(self._messages, (len(self._messages) + len(added), self._text))
        whole.extend(added)  # one copy of the remembered messages, not two
        self._messages = request["messages"] = whole
        return request

    def _remember_whole(self, text: str, request: Any) -> None:
        """After a whole decode of an echoing op, its messages are what the guest holds now.

        Learned once per activation, when nothing is known yet (a transcript that was empty
        when read): a guest whose requests never echo must not pay a second pass per call."""
        if self._text or self._learned_whole or not isinstance(request, dict) \
                or not isinstance(request.get("messages"), list):
            return
        self._learned_whole = True
        for head in _HEADS.values():
            if text.startswith(head):
                found = _array_at(text, len(head))
                if found is not None and found[0]:
                    array, end = found
                    # The first `messages` is not the one decoding kept when the request
                    # names it twice: remember the text with what it decodes to.
                    messages = request["messages"]
                    self._text = text[len(head):end - 1]
                    self._messages = messages if array == messages else array
                return


def _first_nan_is_placeholder() -> Any:
    seen = False

    def constant(name: str) -> Any:
        nonlocal seen
        if name == "NaN" and not seen:
            seen = True
            return PLACEHOLDER
        raise ValueError(f"{name} is not JSON")

    return constant


def _array_end(text: str, start: int) -> int | None:
    """The index just past the JSON array starting at `start`, whose items were already
    decoded once (so this cannot fail on a request the caller accepted), or None."""
    found = _array_at(text, start)
    return None if found is None else found[1]


def _array_at(text: str, start: int) -> tuple[list[Any], int] | None:
    """The JSON array starting at `start` and the index just past it, or None."""
    try:
        value, end = json.JSONDecoder(parse_constant=_first_nan_is_placeholder()).raw_decode(
            text, start)
    except ValueError:
        return None
    return (value, end) if isinstance(value, list) else None
