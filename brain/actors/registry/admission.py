"""The registry's admission backlog: sessions whose work waits for a session actor.

A session actor is a process, and a turn holds its session's actor while its Agentloop computes
(a turn waiting on its model or Tools is suspended and holds none), so the number of sessions
served at once is bounded (`BRAIN_MAX_SESSION_ACTORS`). Work beyond that waits here,
per session and in arrival order, until an actor frees: one entry per session, so a session's
commands keep their order and it never gets two actors. The backlog is bounded by the memory
budget (brain/memory_budget.py: past it a new session or turn is refused `overloaded` at once),
and by `BRAIN_ADMISSION_BACKLOG` sessions where that is set. A
command (a sync send, an end, a cancel, a recovery) that waited `BRAIN_ADMISSION_WAIT_SECS` is
refused the same way, with nothing done, rather than hold its client. A `RunAdmitted` is never
refused nor expired: its turn_started is durable and its client has its 202, so it runs. Nor is
a `Recover` (work a crash or a dead actor left, which must be recorded, and nobody retries), nor
the outcomes and deadlines of suspended turns (`Outcomes`, `ExpireTurn`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from brain.protocol.messages import (
    CreateSession,
    EffectsLost,
    ExpireTurn,
    Outcomes,
    Recover,
    RunAdmitted,
    StartTurn,
    ToSession,
    WebhookRecord,
)

Waiting = list[tuple[ToSession, Any]]
OWED = (RunAdmitted, Recover, Outcomes, EffectsLost, ExpireTurn, WebhookRecord)
"""Work Brain owes a session whatever the load: never refused, never expired (an outcome or a
deadline of a suspended turn is owed to the turn as an admitted one is; so is the record of a
webhook delivery, and the settling of effects a dead executor held)."""
PREFER_WINDOW = 16
"""How far from the head of the line an actor's own kept session may be taken first, and how
many times the head may be passed over for one."""
NEW_WORK = (CreateSession, StartTurn)
"""Work that takes on memory, refused while the memory budget is exhausted
(brain/memory_budget.py); cancels, ends and deletes give memory back and always pass."""


class Backlog:
    def __init__(self, limit: int | None, wait_secs: float) -> None:
        self.limit = limit
        self.wait_secs = wait_secs
        self._sessions: OrderedDict[str, list[tuple[ToSession, Any, float]]] = OrderedDict()
        # the session at the head, and how many times it was passed over
        self._head_passed: tuple[str | None, int] = (None, 0)

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def add(self, msg: ToSession, sender: Any) -> bool:
        """Queue `msg` behind its session's earlier work; False when refused (backlog full).
        Owed work is always queued: refusing an admitted turn would drop accepted work."""
        entry = self._sessions.get(msg.session_id)
        if entry is None:
            if self.limit is not None and len(self._sessions) >= self.limit \
                    and not isinstance(msg.command, OWED):
                return False
            entry = self._sessions[msg.session_id] = []
        entry.append((msg, sender, time.monotonic()))
        return True

    def owes(self, session_id: str, kind: type) -> bool:
        """True when owed work of this kind (`RunAdmitted`, `Recover`) already waits here for
        the session's actor: a repeated hand-over is not queued twice."""
        return any(isinstance(msg.command, kind)
                   for msg, _, _ in self._sessions.get(session_id, ()))

    def put_first(self, session_id: str, waiting: Waiting) -> None:
        """Commands that waited for the session's previous actor to let go: first in line."""
        now = time.monotonic()
        entry = self._sessions.setdefault(session_id, [])
        entry[:0] = [(msg, sender, now) for msg, sender in waiting]
        self._sessions.move_to_end(session_id, last=False)

    def pop(self, preferred: Callable[[str], bool] | None = None
            ) -> tuple[str, Waiting, list[float]]:
        """The session that has waited longest, its work in order, and how long (seconds)
        each piece of work waited. With `preferred`: the first session of the `PREFER_WINDOW`
        at the head that it says yes to (one an idle actor keeps, which opens it without
        reading its journal), if there is one and the head was passed over fewer than
        `PREFER_WINDOW` times, so no session waits more than that many turns of others."""
        head = next(iter(self._sessions))
        passed = self._head_passed[1] if self._head_passed[0] == head else 0
        session_id = head
        if preferred is not None and passed < PREFER_WINDOW:
            session_id = next((candidate for candidate in islice(self._sessions, PREFER_WINDOW)
                               if preferred(candidate)), head)
        self._head_passed = (head, passed + 1) if session_id != head else (None, 0)
        entry = self._sessions.pop(session_id)
        now = time.monotonic()
        return (session_id, [(msg, sender) for msg, sender, _ in entry],
                [now - queued_at for _, _, queued_at in entry])

    def expired(self, now: float) -> Iterator[tuple[ToSession, Any]]:
        """Remove and yield every command (never an admitted turn) queued before
        `now - wait_secs`."""
        cutoff = now - self.wait_secs
        for session_id in list(self._sessions):
            entry = self._sessions[session_id]
            keep = []
            for msg, sender, queued_at in entry:
                if queued_at < cutoff and not isinstance(msg.command, OWED):
                    yield msg, sender
                else:
                    keep.append((msg, sender, queued_at))
            if keep:
                self._sessions[session_id] = keep
            else:
                del self._sessions[session_id]
