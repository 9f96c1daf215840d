"""The Roster actor: which members of the convention this actor system knows, and which are up.

One per member (global name `brain.roster`), created by the boot process of a member only. It
asks Thespian for registration updates (`notifyOnSystemRegistrationChanges`): each
`ActorSystemConventionUpdate` carries a member admin's capabilities when it joins (and again
when it rejoins after a restart, with a new boot id in its identity) and says when it has
left. Thespian notices a member that dies with its process group at once, because the
admin's connection closes; a host that vanishes from the network is noticed only when the
member misses its periodic check-ins (docs/several-hosts.md).

The web front end asks it `members` (a small dict, cached a moment per worker) to choose where
a new session goes and where to forward a request about another member's session. It never
forgets a member's name: a member that left is kept as `up: False`, so its sessions answer
503 `unavailable`, not 404.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from thespian.actors import ActorSystemConventionUpdate

from brain.actors.convention import FRONT_END_CAPABILITY, MEMBER_CAPABILITY
from brain.actors.identity import IDENTITY_CAPABILITY, settings_identity
from brain.actors.trace import TracedDispatcher
from brain.settings import Settings

log = logging.getLogger(__name__)

WATCH = "watch"
MEMBERS = "members"


class Roster(TracedDispatcher):
    trace_name = "roster"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = Settings.from_env()
        self._members: dict[str, dict[str, Any]] = {}
        self._admins: dict[str, str] = {}  # admin address -> member name
        if settings.member is not None:
            self._members[settings.member] = {
                "url": settings.front_end_url, "up": True, "self": True,
                "identity": settings_identity(settings), "pid": os.getpid()}

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == WATCH:
            self.notifyOnSystemRegistrationChanges(True)
            self.send(sender, "watching")
        elif msg == MEMBERS:
            self.send(sender, {name: dict(entry) for name, entry in self._members.items()})

    def receiveMsg_ActorSystemConventionUpdate(self, msg: ActorSystemConventionUpdate,
                                               sender: Any) -> None:
        admin = str(msg.remoteAdminAddress)
        capabilities = msg.remoteCapabilities or {}
        name = capabilities.get(MEMBER_CAPABILITY) or self._admins.get(admin)
        if not isinstance(name, str) or self._members.get(name, {}).get("self"):
            return  # not a Brain member, or this member's own admin (the leader hears itself)
        if msg.remoteAdded:
            self._admins[admin] = name
            self._members[name] = {
                "url": capabilities.get(FRONT_END_CAPABILITY), "up": True, "self": False,
                "identity": capabilities.get(IDENTITY_CAPABILITY), "admin": admin}
            log.warning("convention: member %s joined (%s)", name, admin)
        elif name in self._members and self._members[name].get("admin") == admin:
            self._members[name]["up"] = False
            log.warning("convention: member %s left (%s)", name, admin)
