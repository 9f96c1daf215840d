"""The registry's count of warm session actors: which wait idle, how many sessions each served.

A session actor is a forked process; forking one (and opening the Agentloop runtime in it) costs
more than a whole text turn. So the registry forks them ahead of need, keeps `size` idle, hands
one to a session as it opens, and takes it back when the session is released, as gunicorn keeps
its workers. Below `size` idle actors the registry forks more; a returned actor is kept up to
`keep` idle (at least twice `size`; the registry passes 4 per CPU), so actors of
sessions that were busy at once come back and serve again instead of exiting while the pool
forks their replacements: turns that wait on their model open their session twice, and a fleet
of them keeps every actor busy in bursts (no pool, size 0, keeps none). An actor that has served
`recycle_after` sessions is not taken back but retired, so whatever a long-lived process
accumulates (heap fragments, module caches) is bounded. An actor keeps what it knows of the
last sessions it let go (brain/actors/session/kept_journal.py), so a session that opens again is
handed the actor that let it go last when that one waits idle, and an actor that comes back
while sessions wait is given one it keeps if one is near the head of the line (the registry's
backlog): its suspended turn resumes, or its next turn starts, without reading the journal
again. This class only counts; the registry does the forks, the sends and the exits.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from brain.actors.session.kept_journal import KEPT_SESSIONS


@dataclass
class PooledActor:
    """A session actor and how many sessions it has been handed (ActorAddress is unhashable,
    so the count travels with the address: in the pool, then in the session's slot)."""

    address: Any
    served: int = 0
    kept: deque[str] = field(default_factory=deque)  # the sessions it let go last, newest last


@dataclass
class SessionActorPool:
    size: int
    recycle_after: int  # 0: never retired for age
    keep: int = 0  # idle actors kept on return (at least 2 x size)
    idle: list[PooledActor] = field(default_factory=list)  # most recently returned last
    # each session's actor that let it go last, while that actor keeps it
    _keepers: dict[str, PooledActor] = field(default_factory=dict)

    def adopt(self, address: Any) -> None:
        """A freshly forked actor joins the idle ones."""
        self.idle.append(PooledActor(address))

    def take(self, session_id: str | None = None) -> PooledActor | None:
        """An idle actor for `session_id`, which opens: the one that let it go last if that
        one waits idle, else the warmest; None when none waits."""
        if not self.idle:
            return None
        index = -1
        keeper = self._keepers.get(session_id) if session_id is not None else None
        if keeper is not None:
            for at, waiting in enumerate(self.idle):
                if waiting is keeper:
                    index = at
                    break
        actor = self.idle.pop(index)
        actor.served += 1
        return actor

    def kept_by_idle(self, session_id: str) -> bool:
        """Whether the actor that let `session_id` go last waits idle (`take` hands it over)."""
        keeper = self._keepers.get(session_id)
        return keeper is not None and any(waiting is keeper for waiting in self.idle)

    def returned(self, actor: PooledActor, session_id: str | None = None) -> bool:
        """The actor dropped its session (`session_id`): True if it waits idle again, False if
        it must exit (served its quota, or `keep` wait idle already)."""
        if session_id is not None:
            self._note_kept(actor, session_id)
        if (self.recycle_after and actor.served >= self.recycle_after) \
                or len(self.idle) >= self._kept_idle:
            self.forget(actor)
            return False
        self.idle.append(actor)
        return True

    def _note_kept(self, actor: PooledActor, session_id: str) -> None:
        """The actor keeps `session_id` now, as its own count does (kept_journal.py)."""
        if session_id in actor.kept:
            actor.kept.remove(session_id)
        actor.kept.append(session_id)
        self._keepers[session_id] = actor
        while len(actor.kept) > KEPT_SESSIONS:
            self._drop_keeper(actor.kept.popleft(), actor)

    def forget(self, actor: PooledActor) -> None:
        """The actor keeps nothing any more (it exits)."""
        while actor.kept:
            self._drop_keeper(actor.kept.popleft(), actor)

    def _drop_keeper(self, session_id: str, actor: PooledActor) -> None:
        if self._keepers.get(session_id) is actor:
            del self._keepers[session_id]

    @property
    def _kept_idle(self) -> int:
        """No pool (size 0) keeps none: every open forks, every release exits."""
        return max(self.keep, 2 * self.size) if self.size else 0

    def lost(self, address: Any) -> None:
        """The actor exited (retired, or crashed): forget it if it was idle, and what it kept."""
        for actor in self.idle:
            if actor.address == address:
                self.forget(actor)
        self.idle = [actor for actor in self.idle if actor.address != address]

    @property
    def short(self) -> int:
        """How many idle actors the pool lacks."""
        return max(0, self.size - len(self.idle))
