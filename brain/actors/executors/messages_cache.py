"""The model executor's memory of each session's last messages, so a call decodes only what is new.

A model call's messages arrive as their JSON text (`MessagesText`) when the session knows it.
Every call of a session repeats the previous call's messages and adds a few, so the executor
keeps, per session, the text and the decoded messages of its last call. A text that starts with
the remembered one, followed by `,` or `]`, is decoded as the remembered messages plus the new
part alone; anything else is decoded whole. Either way the result is what decoding the whole
text gives.

The memory is bounded (sessions and characters, least recently used first out): losing an entry
costs one whole decode. Providers get the remembered message objects and must treat them as
read-only, as every provider does (they build their wire requests anew).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from brain.journal.transcript_text import MessagesText

MAX_SESSIONS = 256
MAX_CHARS = 16 << 20  # of JSON text; the decoded messages take a few times as much


class MessagesCache:
    def __init__(self, max_sessions: int = MAX_SESSIONS, max_chars: int = MAX_CHARS) -> None:
        self.max_sessions = max_sessions
        self.max_chars = max_chars
        self._entries: OrderedDict[str, tuple[str, list[Any]]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()  # calls of different sessions run on different threads

    def request(self, session_id: str, request: dict[str, Any]) -> dict[str, Any]:
        """`request` with its messages decoded, if they came as text."""
        messages = request.get("messages")
        if not isinstance(messages, MessagesText):
            return request
        return {**request, "messages": self.decode(session_id, messages.text)}

    def decode(self, session_id: str, text: str) -> list[Any]:
        with self._lock:
            entry = self._entries.get(session_id)
        messages = None
        if entry is not None:
            known, decoded = entry  # known: the text without its closing bracket
            if text.startswith(known) and text[len(known):len(known) + 1] in (",", "]"):
                rest = text[len(known):]
                added = json.loads("[" + rest[1:]) if rest[0] == "," else []
                messages = decoded + added
        if messages is None:
            messages = json.loads(text)
            if not isinstance(messages, list):
                raise ValueError("model call messages are not a JSON array")
        self._remember(session_id, text[:-1], messages)
        return list(messages)  # the provider's list; the message objects are shared

    def _remember(self, session_id: str, known: str, messages: list[Any]) -> None:
        with self._lock:
            old = self._entries.pop(session_id, None)
            if old is not None:
                self._chars -= len(old[0])
            if len(known) > self.max_chars:
                return
            self._entries[session_id] = (known, messages)
            self._chars += len(known)
            while len(self._entries) > self.max_sessions or self._chars > self.max_chars:
                _, (dropped, _) = self._entries.popitem(last=False)
                self._chars -= len(dropped)
