"""Whether the machine's CPUs have room: the share of CPU time that went idle lately.

A session actor is a process that computes: a turn that waits on its model or Tools holds none.
When work waits for an actor, another actor helps only if a CPU would run it. So past a few
actors per CPU the registry forks for its backlog only while the CPUs are not all busy: actors
held by resident sessions (an idle TTL) leave the CPUs idle and get more actors, a fleet of
computing turns keeps the CPUs busy and does not (brain/actors/registry/actor.py).

`/proc/stat`'s first line counts, since boot, the clock ticks all CPUs spent in each state; the
idle share is the difference of two readings. A reading is reused for `MIN_INTERVAL_SECS`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

MIN_INTERVAL_SECS = 0.1
ROOM_SHARE = 0.25
"""Idle share of the CPUs above which they have room for another actor."""
ACTORS_PER_CPU = 4


def cpu_actors() -> int:
    """Actors that keep every CPU busy while some of them commit: 4 per CPU, at least 8."""
    return max(8, ACTORS_PER_CPU * (os.cpu_count() or 1))


def read_ticks(path: Path = Path("/proc/stat")) -> tuple[int, int] | None:
    """(idle ticks, all ticks) of all CPUs since boot; None where there is no /proc/stat."""
    try:
        with open(path) as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(value) for value in fields[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return idle, sum(ticks[:8])  # guest time is already counted in user


class CpuIdle:
    """The idle share of the CPUs since the previous reading (at least MIN_INTERVAL_SECS)."""

    def __init__(self, path: Path = Path("/proc/stat")) -> None:
        self._path = path
        self._last = read_ticks(path)
        self._last_at = time.monotonic()
        self._share = 1.0

    def share(self) -> float:
        now = time.monotonic()
        if now - self._last_at >= MIN_INTERVAL_SECS:
            current = read_ticks(self._path)
            if current is not None and self._last is not None:
                idle = current[0] - self._last[0]
                total = current[1] - self._last[1]
                if total > 0:
                    self._share = idle / total
            self._last, self._last_at = current, now
        return self._share

    def has_room(self) -> bool:
        return self.share() >= ROOM_SHARE


def may_fork_for_backlog(serving: int, limit: int, cpu_bound: int, cpu_has_room: bool) -> bool:
    """Whether the registry forks another actor for work waiting in its backlog: never past
    `limit` (BRAIN_MAX_SESSION_ACTORS), freely below `cpu_bound` actors, and past that only
    while the CPUs have room (the actors are held by something else than computing)."""
    if serving >= limit:
        return False
    return serving < cpu_bound or cpu_has_room
