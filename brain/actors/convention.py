"""Several hosts as one Brain: what a member of a Thespian convention advertises and is named by.

With BRAIN_MEMBER set, each `brain serve` (its own data dir, its own actor system) joins the
convention whose leader's admin is BRAIN_CONVENTION. Thespian does the joining, notices a
member that leaves, and places an actor on the member whose capabilities its
`actorSystemCapabilityCheck` accepts; Brain adds three things on top, all here:

- a member's capabilities name it (`Brain Member`) and its HTTP front end (`Brain Front End`),
  so every other member learns both from Thespian's registration updates (brain/actors/roster.py);
- a session id ends in `-<member>`, so any front end knows, from the id alone, which member holds
  the journal, even when that member is down (and then answers 503 `unavailable`);
- each member's registry has a global name of its own, `brain.registry.<member>`, and accepts
  only its own member: asking for it with `targetActorRequirements={"Brain Member": name}`
  reaches that member's registry from any member (docs/several-hosts.md).

Without BRAIN_MEMBER nothing here changes anything: ids have no suffix and the registry keeps its
one name.
"""

from __future__ import annotations

import os
from typing import Any

from brain.protocol.messages import REGISTRY_GLOBAL_NAME
from brain.settings import MEMBER_NAME, Settings

MEMBER_CAPABILITY = "Brain Member"
FRONT_END_CAPABILITY = "Brain Front End"
CONVENTION_CAPABILITY = "Convention Address.IPv4"  # Thespian's own name for the leader's admin
ROSTER_GLOBAL_NAME = "brain.roster"
SUPERVISOR_GLOBAL_NAME = "brain.supervisor"
MEMBER_SEPARATOR = "-"


def registry_global_name(member: str | None) -> str:
    """The registry's global name: one per actor system, so unique per member in a convention."""
    return REGISTRY_GLOBAL_NAME if member is None else f"{REGISTRY_GLOBAL_NAME}.{member}"


def supervisor_global_name(member: str | None) -> str:
    """The ActorSupervisor's global name, unique per member like the registry's."""
    return SUPERVISOR_GLOBAL_NAME if member is None else f"{SUPERVISOR_GLOBAL_NAME}.{member}"


def roster_global_name(member: str) -> str:
    """Each member's Roster (brain/actors/roster.py), found from the leader by this name."""
    return f"{ROSTER_GLOBAL_NAME}.{member}"


def member_requirements(member: str) -> dict[str, Any]:
    """`targetActorRequirements` that only `member`'s actor system satisfies."""
    return {MEMBER_CAPABILITY: member}


def accepts_member(capabilities: dict[str, Any], requirements: dict[str, Any] | None) -> bool:
    """An actorSystemCapabilityCheck: created where the required member is (anywhere if none)."""
    wanted = (requirements or {}).get(MEMBER_CAPABILITY)
    return wanted is None or wanted == capabilities.get(MEMBER_CAPABILITY)


def convention_capabilities(settings: Settings) -> dict[str, Any]:
    """What a member's admin advertises to the convention; nothing for a single host."""
    if settings.member is None or settings.convention is None:
        return {}
    return {MEMBER_CAPABILITY: settings.member,
            FRONT_END_CAPABILITY: settings.front_end_url,
            CONVENTION_CAPABILITY: settings.convention}


def member_session_id(base_id: str, member: str | None) -> str:
    """A new session's id: `base_id`, ended by the member that will hold its journal."""
    return base_id if member is None else f"{base_id}{MEMBER_SEPARATOR}{member}"


def member_of(session_id: str) -> str | None:
    """The member holding a session, read from its id; None for an id without one."""
    _, separator, member = session_id.rpartition(MEMBER_SEPARATOR)
    if not separator or not MEMBER_NAME.fullmatch(member):
        return None
    return member


CHECKIN_PERIOD = "00:10"
"""How often (MM:SS) a member re-registers with the leader. Thespian's default, 7 min 22 s, left
a restarted leader without its members for minutes; a member that misses 3 check-ins is dropped."""

RESTART_PERIOD = CHECKIN_PERIOD
"""How long a member's admin waits between convention checks while it is not yet (or no longer)
in the convention, and how often the leader re-invites a recorded member that is gone. Thespian's
default, 3 min 22 s, is also how long a member that has just started or restarted waits before
its first check-in: its admin sleeps that long once its first registration is answered, so the
leader, hearing nothing for 3 check-in periods, dropped it again about 30 s after it joined and
took it back only after those 3 min 22 s. Brain keeps both periods the same."""


def prepare_convention_checkins(settings: Settings) -> None:
    """Before Thespian's admin module is imported: a member checks in every CHECKIN_PERIOD,
    from its first minute on."""
    if settings.member is not None:
        os.environ.setdefault("CONVENTION_REREGISTRATION_PERIOD", CHECKIN_PERIOD)
        os.environ.setdefault("CONVENTION_RESTART_PERIOD", RESTART_PERIOD)
