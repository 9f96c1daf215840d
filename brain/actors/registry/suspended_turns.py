"""The registry's table of suspended turns: the turn of each session no actor holds, by session,
and their deadlines in time order.

Apart from the registry (brain/actors/registry/actor.py) because it is bookkeeping with no messages:
a turn is kept when its actor lets go of it, taken by the first command that reaches the
session's next actor, and due for `ExpireTurn` once its deadline passes while it is still kept.
This class only keeps and orders; the registry arms the timer and routes the commands, as with
the pool (brain/actors/registry/pool.py) and the backlog (brain/actors/registry/admission.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any


class SuspendedTurns:
    """Each session's suspended turn (a sessions.state.Turn), and a heap of their deadlines.

    A deadline stays in the heap after its turn is taken; it is skipped when it comes due unless
    the session still has that very turn kept (`sequence`), so taking a turn costs no search.
    """

    def __init__(self) -> None:
        self._turns: dict[str, Any] = {}
        self._deadlines: list[tuple[int, str, int]] = []  # (deadline ms, session, turn)
        self._armed_at: int | None = None  # the deadline the registry's timer is set for

    def __len__(self) -> int:
        return len(self._turns)

    def keep(self, session_id: str, turn: Any) -> bool:
        """Keep the turn; True when it has a deadline (the timer may need arming earlier)."""
        self._turns[session_id] = turn
        if turn.deadline_ms is None:
            return False
        heapq.heappush(self._deadlines, (turn.deadline_ms, session_id, turn.sequence))
        return True

    def waiting_on(self, kinds: tuple[str, ...]) -> list[str]:
        """The sessions whose kept turn waits for an effect of one of `kinds`."""
        return [session_id for session_id, turn in self._turns.items()
                if any(pending.effect in kinds for pending in turn.pending.values())]

    def take(self, session_id: str) -> Any:
        """The session's suspended turn, no longer kept here; None if it has none."""
        return self._turns.pop(session_id, None)

    def timer_secs(self, now_ms: int) -> float | None:
        """Seconds until the earliest deadline (and a millisecond past it), when the registry's
        timer must be set for it; None when no deadline waits or a timer set no later does."""
        if not self._deadlines:
            return None
        due = self._deadlines[0][0]
        if self._armed_at is not None and self._armed_at <= due:
            return None
        self._armed_at = due
        return max(0.0, (due - now_ms) / 1000.0) + 0.001

    def expired(self, now_ms: int) -> Iterator[tuple[str, int]]:
        """The timer fired: each (session, turn) whose deadline passed and is still kept.

        Lazy, so a turn the caller takes while handling one (by routing its `ExpireTurn` to an
        actor) is no longer kept when its next deadline entry comes up.
        """
        self._armed_at = None
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, session_id, turn = heapq.heappop(self._deadlines)
            kept = self._turns.get(session_id)
            if kept is not None and kept.sequence == turn:
                yield session_id, turn
