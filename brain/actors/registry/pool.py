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
accumulates (heap fragments, module caches) is bounded. This class only counts; the registry
does the forks, the sends and the exits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PooledActor:
    """A session actor and how many sessions it has been handed (ActorAddress is unhashable,
    so the count travels with the address: in the pool, then in the session's slot)."""

    address: Any
    served: int = 0


@dataclass
class SessionActorPool:
    size: int
    recycle_after: int  # 0: never retired for age
    keep: int = 0  # idle actors kept on return (at least 2 x size)
    idle: list[PooledActor] = field(default_factory=list)  # most recently returned last

    def adopt(self, address: Any) -> None:
        """A freshly forked actor joins the idle ones."""
        self.idle.append(PooledActor(address))

    def take(self) -> PooledActor | None:
        """An idle actor for a session that opens (the warmest one), or None when none waits."""
        if not self.idle:
            return None
        actor = self.idle.pop()
        actor.served += 1
        return actor

    def returned(self, actor: PooledActor) -> bool:
        """The actor dropped its session: True if it waits idle again, False if it must exit
        (served its quota, or `keep` wait idle already)."""
        if (self.recycle_after and actor.served >= self.recycle_after) \
                or len(self.idle) >= self._kept_idle:
            return False
        self.idle.append(actor)
        return True

    @property
    def _kept_idle(self) -> int:
        """No pool (size 0) keeps none: every open forks, every release exits."""
        return max(self.keep, 2 * self.size) if self.size else 0

    def lost(self, address: Any) -> None:
        """The actor exited (retired, or crashed): forget it if it was idle."""
        self.idle = [actor for actor in self.idle if actor.address != address]

    @property
    def short(self) -> int:
        """How many idle actors the pool lacks."""
        return max(0, self.size - len(self.idle))
