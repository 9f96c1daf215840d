"""Server-Sent Events for one session: catch up from the journal, then follow new commits.

Frames: committed Events as `id: <sequence>` / `event: <kind>` / `data: <Event JSON>`; live model
deltas as `event: model_delta` with `data: {started, delta}` and no id; a comment every 15 s
keeps idle streams open and lets the server notice a closed client. The stream ends after
`session_ended` or when the session is deleted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from brain.web.live_hub import LiveHub

KEEPALIVE_SECS = 15.0
TERMINAL_KINDS = frozenset({"session_ended"})
_EFFECT_TERMINALS = frozenset({"model_call_ended", "model_call_failed"})


def event_frame(event: dict[str, Any]) -> bytes:
    data = json.dumps(event, separators=(",", ":"))
    return f"id: {event['sequence']}\nevent: {event['kind']}\ndata: {data}\n\n".encode()


def delta_frame(delta: dict[str, Any]) -> bytes:
    data = json.dumps({"started": delta.get("started"), "delta": delta.get("delta", "")},
                      separators=(",", ":"))
    return f"event: model_delta\ndata: {data}\n\n".encode()


def follow(reader: Any, session_dir: Path, hub: LiveHub, session_id: str, after: int,
           keepalive_secs: float = KEEPALIVE_SECS) -> Iterator[bytes]:
    subscription = hub.subscribe(session_id)  # before catching up, so no hint is missed
    state = _FollowState(after)
    try:
        yield b": stream open\n\n"
        yield from state.read(reader, through=None)
        while not state.ended and (session_dir / "journal").is_dir():
            woken = subscription.wait(keepalive_secs)
            for kind, value in subscription.take():
                if kind == "delta":
                    if value.get("started") not in state.finished_calls:
                        yield delta_frame(value)
                elif value > state.cursor:
                    yield from state.read(reader, through=value)
            if not woken:
                # Silence: re-read everything (a lost hint costs at most this delay).
                yield from state.read(reader, through=None)
                yield b": keep-alive\n\n"
    finally:
        hub.unsubscribe(subscription)


class _FollowState:
    """A subscriber's cursor and what it has seen, advanced only by committed Events."""

    def __init__(self, after: int) -> None:
        self.cursor = after
        self.finished_calls: set[int] = set()
        self.ended = False

    def read(self, reader: Any, through: int | None) -> Iterator[bytes]:
        """Committed Events after the cursor, up to `through` when a hint bounds them."""
        for event in reader.events_after(self.cursor):
            if through is not None and event["sequence"] > through:
                return
            yield event_frame(event)
            self.cursor = event["sequence"]
            if event["kind"] in _EFFECT_TERMINALS:
                self.finished_calls.add(event["data"].get("started"))
            if event["kind"] in TERMINAL_KINDS:
                self.ended = True
                return
