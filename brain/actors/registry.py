"""The Registry actor: one per actor system (globalName), the router to session actors.

It hands a warm session actor from its pool (brain/actors/pool.py) to a session as it opens,
forwards every command to it, and grants a session actor's request to be released only when
nothing it has not yet seen is on the way. Until a released actor has said it dropped the
session (`Returned`: journal closed, so the writer lock is free) or has exited, commands for its
session wait here and then go to another actor: there is never more than one actor per session.
The pool is refilled by forks made from a timer when no command came in for a moment, so a fork
is on a request's path only when the pool is empty. It never touches a journal and never waits
on anybody, so it stays responsive however slow a session is.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from thespian.actors import ActorExitRequest, ChildActorExited, WakeupMessage

from brain.actors.convention import accepts_member
from brain.actors.messages import (
    Delivered,
    FillPool,
    RefillPool,
    ReleaseMe,
    Returned,
    ReturnToPool,
    Services,
    ToSession,
    Warmed,
    WarmUp,
)
from brain.actors.pool import PooledActor, SessionActorPool
from brain.actors.trace import TracedDispatcher
from brain.settings import Settings

log = logging.getLogger(__name__)

REFILL_QUIET_SECS = 0.02
"""A refill fork waits until no command or release has come in for this long, so it does not
sit in front of a burst's commands, nor replace an actor that is about to come back."""


@dataclass
class SessionSlot:
    actor: PooledActor
    forwarded: int = 0
    exiting: bool = False  # release granted; the actor may still hold the journal lock
    queued: list[tuple[ToSession, Any]] = field(default_factory=list)


class Registry(TracedDispatcher):
    trace_name = "registry"

    @staticmethod
    def actorSystemCapabilityCheck(capabilities: dict, requirements: dict) -> bool:
        """In a convention, a member's registry is made on that member alone (so is found
        from any member by its requirements; brain/actors/convention.py)."""
        return accepts_member(capabilities, requirements)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slots: dict[str, SessionSlot] = {}
        self._services: dict[str, Any] = {}
        settings = Settings.from_env()
        self._pool = SessionActorPool(settings.session_pool_size, settings.session_actor_sessions)
        self._last_command = 0.0
        self._refill_armed = False
        self._modules = configured_modules(settings)
        self._fill_waiter: Any = None  # who asked for FillPool, until its actors are warm
        self._warming = 0

    def receiveMsg_Services(self, msg: Services, sender: Any) -> None:
        self._services = dict(msg.addresses)

    def receiveMsg_ToSession(self, msg: ToSession, sender: Any) -> None:
        self._last_command = time.monotonic()
        slot = self._slots.get(msg.session_id)
        if slot is not None and slot.exiting:
            # One actor per session at a time: the next one waits until this one has let go.
            slot.queued.append((msg, sender))
            return
        if slot is None:
            slot = self._open(msg.session_id)
        self._forward(slot, msg, sender)

    def _open(self, session_id: str) -> SessionSlot:
        actor = self._pool.take()
        if actor is None:  # the pool is empty: this one open pays for a fork
            actor = PooledActor(self._fork(), served=1)
        slot = SessionSlot(actor)
        self._slots[session_id] = slot
        self._arm_refill()
        return slot

    def _fork(self) -> Any:
        from brain.actors.session import SessionActor

        address = self.createActor(SessionActor)
        self.send(address, WarmUp(self._modules))
        return address

    # --- the pool -----------------------------------------------------------------------------

    def receiveMsg_FillPool(self, msg: FillPool, sender: Any) -> None:
        """Boot fills the pool before it says `ready`, so no request ever waits for these."""
        self._fill_waiter = sender
        self._fill_step()

    def _fill_step(self) -> None:
        """One actor first, whose warm-up writes the compiled-module cache, then the rest, which
        map that cache (pages shared by all) instead of each compiling the module into private
        memory (~2 MiB more USS each, and the CPU of 8 compiles at once)."""
        if not self._pool.short:
            self.send(self._fill_waiter, "filled")
            self._fill_waiter = None
            return
        self._warming = 1 if not self._pool.idle else self._pool.short
        for _ in range(self._warming):
            self._pool.adopt(self._fork())

    def receiveMsg_Warmed(self, msg: Warmed, sender: Any) -> None:
        if self._fill_waiter is None:
            return  # a refill's actor: nobody waits for it
        self._warming -= 1
        if self._warming == 0:
            self._fill_step()

    def _arm_refill(self, secs: float = REFILL_QUIET_SECS) -> None:
        if self._pool.short and not self._refill_armed:
            self._refill_armed = True
            self.wakeupAfter(secs, RefillPool())

    def receiveMsg_WakeupMessage(self, msg: WakeupMessage, sender: Any) -> None:
        if not isinstance(msg.payload, RefillPool):
            return
        self._refill_armed = False
        quiet_for = time.monotonic() - self._last_command
        if quiet_for < REFILL_QUIET_SECS:
            self._arm_refill(REFILL_QUIET_SECS - quiet_for)
            return
        if self._pool.short:
            self._pool.adopt(self._fork())  # one fork, then commands that came meanwhile
            self._arm_refill(0.0)

    def _forward(self, slot: SessionSlot, msg: ToSession, sender: Any) -> None:
        slot.forwarded += 1
        self.send(slot.actor.address, Delivered(msg.request_id, msg.session_id, msg.command,
                                                sender, self._services))

    def receiveMsg_ReleaseMe(self, msg: ReleaseMe, sender: Any) -> None:
        self._last_command = time.monotonic()
        slot = self._slots.get(msg.session_id)
        if slot is None or slot.exiting or slot.actor.address != sender \
                or slot.forwarded != msg.handled:
            return  # a command is on its way to that actor; it will ask again when idle
        slot.exiting = True
        self.send(sender, ReturnToPool())

    def receiveMsg_Returned(self, msg: Returned, sender: Any) -> None:
        self._last_command = time.monotonic()
        slot = self._slots.get(msg.session_id)
        if slot is None or slot.actor.address != sender:
            return
        del self._slots[msg.session_id]
        if not self._pool.returned(slot.actor):
            self.send(sender, ActorExitRequest())  # recycled, or more idle than the pool holds
            self._arm_refill()
        self._reopen(msg.session_id, slot)

    def receiveMsg_ChildActorExited(self, msg: ChildActorExited, sender: Any) -> None:
        self._pool.lost(msg.childAddress)
        self._arm_refill()
        for session_id, slot in list(self._slots.items()):
            if slot.actor.address != msg.childAddress:
                continue
            del self._slots[session_id]
            if not slot.exiting:
                log.warning("session actor for %s exited unexpectedly", session_id)
            self._reopen(session_id, slot)

    def _reopen(self, session_id: str, slot: SessionSlot) -> None:
        """Commands that waited for the session's last actor to let go go to its next one."""
        if slot.queued:
            fresh = self._open(session_id)
            for queued, reply_to in slot.queued:
                self._forward(fresh, queued, reply_to)

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == "ping":
            self.send(sender, "pong")
        elif msg == "stats":
            open_slots = [slot for slot in self._slots.values() if not slot.exiting]
            self.send(sender, {"open_sessions": len(open_slots),
                               "pooled_actors": len(self._pool.idle)})


def configured_modules(settings: Settings) -> tuple[str, ...]:
    """The module file of every configured Agentloop, read here once: loading the configuration
    in each pooled actor cost each ~1.2 MiB of private memory (measured)."""
    from brain.config import BrainConfig, agentloop_path

    try:
        agentloops = BrainConfig.load(settings.config).agentloops
    except Exception:
        log.exception("pooled session actors: no configuration to warm up from")
        return ()
    return tuple(str(agentloop_path(spec["path"])) for spec in agentloops.values())
