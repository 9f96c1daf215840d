"""Admitted turns the registry holds back for a moment while a burst of submits streams in.

A submit is answered 202 by the web worker that admits it (its `turn_started` durable), and the
turn is handed to the registry to run. Since a turn that waits on its model holds no actor, the
registry can start every admitted turn at once, and does: the first activation of each runs,
commits its model call and suspends. During a burst of submits that work competes for the CPUs
with the admissions still being answered: 600 submits at once, each turn started as it came,
were answered within 1.7-2.1 s, against 0.7-0.85 s when turns cannot suspend and so cannot all
start at once (tools/bench/burst.py, one sitting). Their
clients have their 202, so their turns can wait a moment: the registry starts the admitted
turns once no batch of them has come for `QUIET_SECS`, or once the oldest has waited
`MAX_DEFER_SECS` (600 submits were then answered within 0.73-0.85 s; 0.9-1.0 s with 0.5 s).
A command of the session's own (a cancel, a send) starts its held turn first.

This class only keeps the order and the clock; the registry forwards what it returns.
"""

from __future__ import annotations

QUIET_SECS = 0.05
MAX_DEFER_SECS = 1.0


class DeferredStarts:
    def __init__(self, quiet_secs: float = QUIET_SECS,
                 max_defer_secs: float = MAX_DEFER_SECS) -> None:
        self.quiet_secs = quiet_secs
        self.max_defer_secs = max_defer_secs
        self._sessions: dict[str, None] = {}  # in arrival order
        self._first_at = 0.0
        self._last_at = 0.0

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session_ids: tuple[str, ...] | list[str], now: float) -> bool:
        """Hold these sessions' admitted turns; True when the first of a new burst came
        (the caller arms its timer then)."""
        first = not self._sessions
        if first:
            self._first_at = now
        self._last_at = now
        for session_id in session_ids:
            self._sessions[session_id] = None
        return first and bool(self._sessions)

    def take(self, session_id: str) -> bool:
        """Remove one session (a command of its own arrived: its turn starts first)."""
        return self._sessions.pop(session_id, 0) is None

    def due(self, now: float) -> list[str]:
        """Every held session, in order, when the burst is quiet or the oldest waited long
        enough; otherwise nothing."""
        if not self._sessions:
            return []
        if now - self._last_at < self.quiet_secs and now - self._first_at < self.max_defer_secs:
            return []
        sessions, self._sessions = list(self._sessions), {}
        return sessions

    def next_check(self, now: float) -> float:
        """Seconds until `due` may return something."""
        return max(0.001, min(self._last_at + self.quiet_secs,
                              self._first_at + self.max_defer_secs) - now)
