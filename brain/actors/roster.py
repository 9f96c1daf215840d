"""The Roster actor: which members of the convention this actor system knows, and which are up.

One per member (global name `brain.roster.<member>`), created by the boot process of a member
only. It asks Thespian for registration updates (`notifyOnSystemRegistrationChanges`): each
`ActorSystemConventionUpdate` carries a member admin's capabilities when it joins (and again
when it rejoins after a restart, with a new boot id in its identity) and says when it has
left. Thespian notices a member that dies with its process group at once, because the
admin's connection closes; a host that vanishes from the network is noticed only when the
member misses its periodic check-ins (docs/several-hosts.md).

Thespian 4.0.1 forgets a convention when its leader restarts: the members keep believing in the
old leader and never register with the new one. So the leader's roster writes down the admin
address of every member it has seen (`run/convention.json`, the latest address per member name),
and a restarted leader pre-registers them (`preRegisterRemoteSystem`), which makes Thespian
invite each of them back. Thespian re-invites a pre-registered address for as long as it is
registered, so when a member comes back at another address (a member without a fixed actor
port gets a new one at each start) the old one is deregistered, and forgotten in the record.

Thespian also tells a member about the leader only, never about the other members. So the
leader's roster, which hears of every member, sends its whole table (`RosterTable`) to every
other member's roster whenever a member joins or leaves; a member takes the leader's word for
every member but itself.

The web front end asks it `members` (a small dict, cached a moment per worker) to choose where
a new session goes and where to forward a request about another member's session. It never
forgets a member's name: a member that left is kept as `up: False`, so its sessions answer
503 `unavailable`, not 404.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thespian.actors import ActorSystemConventionUpdate

from brain.actors.convention import (
    FRONT_END_CAPABILITY,
    MEMBER_CAPABILITY,
    accepts_member,
    member_requirements,
    roster_global_name,
)
from brain.actors.identity import IDENTITY_CAPABILITY, settings_identity
from brain.actors.trace import TracedDispatcher
from brain.durable_dirs import make_dirs_durable, replace_durably
from brain.settings import Settings

log = logging.getLogger(__name__)

WATCH = "watch"
MEMBERS = "members"
NOT_JOINED_CHECK = "not joined?"
JOIN_WAIT_SECS = 20
"""A member not admitted by then says so once, at error level: a leader that answers admits a
member within a second; one whose frames the leader drops (another actor secret) never is."""


@dataclass(frozen=True)
class RosterTable:
    """The leader's view of every member, sent to each other member's roster."""

    members: dict[str, dict[str, Any]]


class Roster(TracedDispatcher):
    trace_name = "roster"

    @staticmethod
    def actorSystemCapabilityCheck(capabilities: dict, requirements: dict) -> bool:
        """Found from the leader by its member's requirements, like the registry."""
        return accepts_member(capabilities, requirements)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = Settings.from_env()
        self._members: dict[str, dict[str, Any]] = {}
        self._admins: dict[str, str] = {}  # admin address -> member name
        self._record = settings.data_path / "run" / "convention.json"
        self._is_leader = settings.convention == f"{settings.actor_bind}:{settings.actor_port}"
        self._me = settings.member
        self._convention = settings.convention
        self._joined = False
        if settings.member is not None:
            self._members[settings.member] = {
                "url": settings.front_end_url, "up": True, "self": True,
                "identity": settings_identity(settings), "pid": os.getpid()}

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == WATCH:
            self.notifyOnSystemRegistrationChanges(True)
            if not self._is_leader:
                self.wakeupAfter(JOIN_WAIT_SECS, NOT_JOINED_CHECK)
            if self._is_leader:
                for address in recorded_members(self._record).values():
                    self.preRegisterRemoteSystem(address, {})
            self.send(sender, "watching")
        elif msg == MEMBERS:
            self.send(sender, {name: dict(entry) for name, entry in self._members.items()})

    def receiveMsg_WakeupMessage(self, msg: Any, sender: Any) -> None:
        if msg.payload == NOT_JOINED_CHECK and not self._joined:
            log.error("convention: this member has not joined the convention at %s %d s after "
                      "it started: the leader has not answered its registration. Check that "
                      "the leader is up and reachable there, and that BRAIN_ACTOR_SECRET_FILE "
                      "holds the same bytes as the leader's (a leader drops, unread, every "
                      "frame signed with another secret)", self._convention, JOIN_WAIT_SECS)

    def receiveMsg_ActorSystemConventionUpdate(self, msg: ActorSystemConventionUpdate,
                                               sender: Any) -> None:
        admin = str(msg.remoteAdminAddress)
        capabilities = msg.remoteCapabilities or {}
        if msg.remoteAdded:
            self._joined = True  # a member hears of the leader first, once it is admitted
        name = capabilities.get(MEMBER_CAPABILITY) or self._admins.get(admin)
        if not isinstance(name, str) or self._members.get(name, {}).get("self"):
            return  # not a Brain member, or this member's own admin (the leader hears itself)
        if msg.remoteAdded:
            self._forget_old_address(name, host_port(msg.remoteAdminAddress))
            self._admins[admin] = name
            self._members[name] = {
                "url": capabilities.get(FRONT_END_CAPABILITY), "up": True, "self": False,
                "identity": capabilities.get(IDENTITY_CAPABILITY), "admin": admin,
                "admin_host_port": host_port(msg.remoteAdminAddress)}
            log.warning("convention: member %s joined (%s)", name, admin)
            if self._is_leader:
                record_members(self._record, self._members)
        elif name in self._members and self._members[name].get("admin") == admin:
            self._members[name]["up"] = False
            log.warning("convention: member %s left (%s)", name, admin)
        else:
            return
        if self._is_leader:
            self._tell_members()

    def _forget_old_address(self, name: str, address: str | None) -> None:
        """The leader stops re-inviting the address a rejoining member had before."""
        if not self._is_leader or address is None:
            return
        old = self._members.get(name, {}).get("admin_host_port")
        if old is None:
            old = recorded_members(self._record).get(name)
        if old is not None and old != address:
            self.deRegisterRemoteSystem(old)
            log.warning("convention: member %s moved from %s to %s", name, old, address)

    def _tell_members(self) -> None:
        """Every other member that is up gets the whole table, looked up afresh each time (a
        member that restarted has a new roster)."""
        table = RosterTable({name: dict(entry) for name, entry in self._members.items()})
        for name, entry in self._members.items():
            if not entry.get("self") and entry.get("up"):
                roster = self.createActor(Roster, targetActorRequirements=member_requirements(
                    name), globalName=roster_global_name(name))
                self.send(roster, table)

    def receiveMsg_RosterTable(self, msg: RosterTable, sender: Any) -> None:
        for name, entry in msg.members.items():
            if name != self._me:
                self._members[name] = {**entry, "self": False}


def host_port(address: Any) -> str | None:
    """`HOST:PORT` of a Thespian TCP admin address, as preRegisterRemoteSystem takes it."""
    sockname = getattr(getattr(address, "addressDetails", None), "sockname", None)
    return f"{sockname[0]}:{sockname[1]}" if sockname else None


def recorded_members(record: Path) -> dict[str, str]:
    """Member name -> its last admin `HOST:PORT`, as the leader wrote them down. A record from
    before names were kept (a plain list of addresses) is read under made-up names, so a
    restarted leader still invites those members back once."""
    try:
        loaded = json.loads(record.read_text())
    except (OSError, ValueError):
        return {}
    if isinstance(loaded, list):
        return {f"#{index}": str(address) for index, address in enumerate(loaded)}
    if isinstance(loaded, dict):
        return {str(name): str(address) for name, address in loaded.items()}
    return {}


def record_members(record: Path, members: dict[str, dict[str, Any]]) -> None:
    """Write the latest admin address of every member seen, one per name."""
    addresses = {name: address for name, address in recorded_members(record).items()
                 if not name.startswith("#")}
    addresses.update({name: entry["admin_host_port"] for name, entry in members.items()
                      if entry.get("admin_host_port")})
    make_dirs_durable(record.parent)
    replace_durably(record, (json.dumps(addresses, sort_keys=True) + "\n").encode())
