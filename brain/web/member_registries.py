"""Where another member's registry is, for the creates a front end places on that member.

A front end finds another member's registry through Thespian: its own admin is asked for an
actor of class `Registry` that only that member accepts (docs/several-hosts.md). A member knows
only the convention's leader, so that question goes member -> leader -> target. While the leader
is cut off from this member, it is never answered, and Thespian's `createActor` waited as long
as the cut lasted (48 s in a 45 s partition), holding the client's create.

So a front end:

- remembers each member's registry address, for that member's boot (its identity changes
  when it restarts, and the address is looked up again); after the first create, later ones go
  straight from this front end to the registry, and a cut between this member and the leader
  no longer matters;
- looks an address up in a thread of its own and waits at most LOOKUP_SECS for it, then answers
  that the member cannot be reached now (the create falls back to this member, below); one
  lookup per member runs at a time, so a partition cannot pile up threads;
- forgets an address whose port refuses the connection (the member restarted).

A lookup that outlives its wait finishes on its own (Thespian gives up after about a minute) and
its answer is kept for the next create.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from brain import errors

log = logging.getLogger(__name__)

LOOKUP_SECS = 2.0  # the same bound a forward to another member's front end has to connect


class MemberNotReached(errors.Unavailable):
    """The member could not be reached and the request certainly did not arrive there: a
    create may go to another member instead."""


class _Lookup:
    __slots__ = ("done", "address")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.address: Any = None


class MemberRegistries:
    """Registry addresses of the other members, by member name and boot identity."""

    def __init__(self, look_up: Callable[[str], Any]) -> None:
        """`look_up(member_name)` blocks until Thespian answers and returns the address, or
        None when it answered that no such member is there."""
        self._look_up = look_up
        self._lock = threading.Lock()
        self._known: dict[str, tuple[str | None, Any]] = {}
        self._running: dict[str, _Lookup] = {}

    def address(self, name: str, identity: str | None, wait: float = LOOKUP_SECS) -> Any:
        """The registry of member `name` as booted with `identity`; MemberNotReached when it
        cannot be found within `wait` seconds."""
        with self._lock:
            known = self._known.get(name)
            if known is not None and known[0] == identity:
                return known[1]
            lookup = self._running.get(name)
            if lookup is None:
                lookup = self._running[name] = _Lookup()
                threading.Thread(target=self._run, args=(name, identity, lookup),
                                 name=f"brain-registry-lookup-{name}", daemon=True).start()
        if not lookup.done.wait(wait) or lookup.address is None:
            raise MemberNotReached(f"member {name} is not reachable now; retry later")
        return lookup.address

    def forget(self, name: str, address: Any) -> None:
        """Drop `address` (its port refused a connection): the next create looks it up again."""
        with self._lock:
            known = self._known.get(name)
            if known is not None and known[1] == address:
                del self._known[name]

    def _run(self, name: str, identity: str | None, lookup: _Lookup) -> None:
        try:
            lookup.address = self._look_up(name)
        except Exception:  # noqa: BLE001 - a lookup thread must end, and say why
            log.exception("looking up member %s's registry failed", name)
        finally:
            with self._lock:
                if lookup.address is not None:
                    self._known[name] = (identity, lookup.address)
                self._running.pop(name, None)
            lookup.done.set()
