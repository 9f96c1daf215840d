"""The newest committed Events of one session, read once per web worker for all its streams.

Without it, every live subscriber would re-read the journal after every commit: with 100
followers of one session, a commit would cost 100 journal reads and 100 JSON encodings of the
same Events in each worker. A `SessionTail` reads each new Event once, encodes its SSE frame
once, and hands the frames to every stream of the session in this worker.

It is only a cache in front of the journal, with the journal's order: it holds every Event
after `covered_from` (until old ones are dropped), read by one `EventFollower`. A stream whose
cursor is older than what the tail holds reads the journal on its own.
"""

from __future__ import annotations

import bisect
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from brain.protocol.records import MODEL_CALL_ENDED, MODEL_CALL_FAILED

TAIL_EVENTS = 2048  # Events kept per session and worker; the older half is dropped past this
TAIL_BYTES = 8 << 20  # and frame bytes kept: a session of large model results stays bounded
EFFECT_TERMINALS = frozenset({MODEL_CALL_ENDED, MODEL_CALL_FAILED})


@dataclass(frozen=True, slots=True)
class TailEvent:
    """One committed Event as a stream needs it: its SSE frame, encoded once."""

    sequence: int
    kind: str
    started: Any  # the `started` of an effect terminal (streams stop its deltas), else None
    frame: bytes


def event_frame(event: dict[str, Any]) -> bytes:
    data = json.dumps(event, separators=(",", ":"))
    return f"id: {event['sequence']}\nevent: {event['kind']}\ndata: {data}\n\n".encode()


def tail_event(event: dict[str, Any]) -> TailEvent:
    started = event["data"].get("started") if event["kind"] in EFFECT_TERMINALS else None
    return TailEvent(event["sequence"], event["kind"], started, event_frame(event))


class SessionTail:
    """Shared, in order, bounded. Safe for the greenlets and threads of one worker."""

    def __init__(self, capacity: int = TAIL_EVENTS, max_bytes: int = TAIL_BYTES) -> None:
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._events: list[TailEvent] = []
        self._sequences: list[int] = []
        self._bytes = 0
        self._follower: Any = None
        self._covered_from = 0  # every Event after this sequence is held (or was dropped below)

    def read(
        self, after: int, through: int | None, start: Callable[[int], Any]
    ) -> tuple[list[TailEvent], int] | None:
        """The Events after `after` (through `through` when given) and the journal position
        they cover, reading the journal once for everyone when needed; None when `after` is
        older than what the tail holds. `start(after)` makes the tail's follower on first use.
        """
        with self._lock:
            if self._follower is None:
                self._follower = start(after)
                self._covered_from = after
            if after < self._covered_from:
                return None
            if through is None or through > self._follower.after:
                for event in self._follower.read(through):
                    held = tail_event(event)
                    self._events.append(held)
                    self._sequences.append(held.sequence)
                    self._bytes += len(held.frame)
                self._trim()
            covered = self._follower.after
            if through is not None:
                covered = min(covered, through)
            first = bisect.bisect_right(self._sequences, after)
            last = (
                len(self._sequences)
                if through is None
                else bisect.bisect_right(self._sequences, through)
            )
            return self._events[first:last], max(covered, after)

    def _trim(self) -> None:
        """Past either bound, keep the newer half of both: the Events every stream at the head
        still needs, while a stream further behind reads the journal on its own."""
        if len(self._events) <= self._capacity and self._bytes <= self._max_bytes:
            return
        keep_events, keep_bytes, drop = self._capacity // 2, self._max_bytes // 2, 0
        while drop < len(self._events) and (
            len(self._events) - drop > keep_events or self._bytes > keep_bytes
        ):
            self._bytes -= len(self._events[drop].frame)
            drop += 1
        if drop:
            self._covered_from = self._sequences[drop - 1]
            del self._events[:drop]
            del self._sequences[:drop]
