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
    state = _FollowState(reader.follower(after))
    try:
        yield b": stream open\n\n"
        yield from state.read(through=None)
        while not state.ended and (session_dir / "journal").is_dir():
            woken = subscription.wait(keepalive_secs)
            items = subscription.take()
            lagging = len(items) > LAGGING_ITEMS
            for index, (kind, value) in enumerate(items):
                if kind == "delta":
                    # A subscriber this far behind gets committed results, not stale previews.
                    if not lagging and value.get("started") not in state.finished_calls:
                        yield delta_frame(value)
                elif value > state.cursor and not _commit_follows(items, index):
                    yield from state.read(through=value)
            if not woken:
                # Silence: re-read everything (a lost hint costs at most this delay).
                yield from state.read(through=None)
                yield b": keep-alive\n\n"
    finally:
        hub.unsubscribe(subscription)


LAGGING_ITEMS = 256


def _commit_follows(items: list[tuple[str, Any]], index: int) -> bool:
    """True when the next item is also a commit hint: read once, through the later one."""
    return index + 1 < len(items) and items[index + 1][0] == "commit"


class _FollowState:
    """A subscriber's position, advanced only by committed Events it has delivered."""

    def __init__(self, follower: Any) -> None:
        self.follower = follower
        self.finished_calls: set[int] = set()
        self.ended = False

    @property
    def cursor(self) -> int:
        return self.follower.after

    def read(self, through: int | None) -> Iterator[bytes]:
        """Committed Events after the cursor, up to `through` when a hint bounds them."""
        for event in self.follower.read(through):
            yield event_frame(event)
            if event["kind"] in _EFFECT_TERMINALS:
                self.finished_calls.add(event["data"].get("started"))
            if event["kind"] in TERMINAL_KINDS:
                self.ended = True
                return
