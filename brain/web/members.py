"""A front end's view of the convention: who holds a session, and where a new one goes.

Only a member (BRAIN_MEMBER set) has one. The members, their front-end URLs and whether they
are up come from this member's Roster actor (brain/actors/roster.py), asked at most once a
second per worker. Before a new session is placed on another member, its front end must accept
a connection: the roster may not have heard yet of a member that died a moment ago, and a
Thespian `createActor` towards a dead member waits 50 s before it fails.
"""

from __future__ import annotations

import itertools
import random
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from brain import errors
from brain.actors.convention import member_of, roster_global_name
from brain.settings import Settings

ROSTER_CACHE_SECS = 1.0
PROBE_TIMEOUT_SECS = 1.0


@dataclass(frozen=True)
class Member:
    name: str
    url: str
    up: bool
    identity: str | None
    is_self: bool


def unavailable(name: str) -> errors.BrainError:
    return errors.Unavailable(f"the member holding this session ({name}) is not reachable; "
                              "retry later")


def front_end_answers(url: str, timeout: float = PROBE_TIMEOUT_SECS) -> bool:
    """True when a TCP connection to the URL's host and port is accepted."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


class Convention:
    def __init__(self, settings: Settings, gateway: Any) -> None:
        assert settings.member is not None
        self.settings = settings
        self.me = settings.member
        self._gateway = gateway
        self._lock = threading.Lock()
        self._cached: dict[str, Member] = {}
        self._cached_at = -ROSTER_CACHE_SECS
        self._turn = itertools.count(random.randrange(1 << 16))

    def members(self) -> dict[str, Member]:
        """Every member this actor system knows of, as its Roster says (cached a moment)."""
        if time.monotonic() - self._cached_at < ROSTER_CACHE_SECS:
            return self._cached
        from brain.actors.roster import MEMBERS, Roster

        answer = self._gateway.ask_global(roster_global_name(self.me), Roster, MEMBERS, 5.0)
        if not isinstance(answer, dict):
            raise errors.Internal("the convention roster did not answer")
        members = {name: Member(name, entry.get("url") or "", bool(entry.get("up")),
                                entry.get("identity"), bool(entry.get("self")))
                   for name, entry in answer.items()}
        with self._lock:
            self._cached, self._cached_at = members, time.monotonic()
        return members

    def owner(self, session_id: str) -> Member | None:
        """The other member holding `session_id`; None when it is this one.

        Whether the owner is served is this front end's own finding, not the leader's: the
        request is forwarded to every member whose front end is known, also one the leader has
        dropped (a cut between the leader and that member says nothing about this member's
        road to it), and a forward that cannot connect answers `unavailable` within its connect
        timeout (brain/web/forwarding.py). A member never seen is `unavailable` (503) too,
        never `not_found`: this front end cannot tell a session that does not exist from one
        it cannot reach.
        """
        name = member_of(session_id)
        if name is None or name == self.me:
            return None
        member = self.members().get(name)
        if member is None or not member.url:
            raise unavailable(name)
        return member

    def place(self) -> Member | None:
        """The member a new session goes to, in turn over those up; None means this one."""
        members = sorted(self.members().values(), key=lambda m: m.name)
        up = [m for m in members if m.up and (m.is_self or m.url)]
        for _ in range(len(up)):
            member = up[next(self._turn) % len(up)]
            if member.is_self:
                return None
            if front_end_answers(member.url):
                return member
        return None
