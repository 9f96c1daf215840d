"""The Registry actor: one per actor system (globalName), the router to session actors.

It opens a session actor on demand, forwards every command to it, and grants a session actor's
request to be released only when nothing it has not yet seen is on the way. Until a released
actor has really exited (it may still hold the journal's writer lock), commands for its session
wait here and then go to a fresh actor: there is never more than one actor per session. It
never touches a journal and never waits on anybody, so it stays responsive however slow a
session is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from thespian.actors import ActorExitRequest, ChildActorExited

from brain.actors.messages import Delivered, ReleaseMe, Services, ToSession
from brain.actors.ownership import OWNER_QUESTION, owner_identity
from brain.actors.trace import TracedDispatcher

log = logging.getLogger(__name__)


@dataclass
class SessionSlot:
    address: Any
    forwarded: int = 0
    exiting: bool = False  # release granted; the process may still hold the journal lock
    queued: list[tuple[ToSession, Any]] = field(default_factory=list)


class Registry(TracedDispatcher):
    trace_name = "registry"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slots: dict[str, SessionSlot] = {}
        self._services: dict[str, Any] = {}

    def receiveMsg_Services(self, msg: Services, sender: Any) -> None:
        self._services = dict(msg.addresses)

    def receiveMsg_ToSession(self, msg: ToSession, sender: Any) -> None:
        slot = self._slots.get(msg.session_id)
        if slot is not None and slot.exiting:
            # One actor per session at a time: the next one waits until this one has exited.
            slot.queued.append((msg, sender))
            return
        if slot is None:
            slot = self._open(msg.session_id)
        self._forward(slot, msg, sender)

    def _open(self, session_id: str) -> SessionSlot:
        from brain.actors.session import SessionActor

        slot = SessionSlot(self.createActor(SessionActor))
        self._slots[session_id] = slot
        return slot

    def _forward(self, slot: SessionSlot, msg: ToSession, sender: Any) -> None:
        slot.forwarded += 1
        self.send(slot.address, Delivered(msg.request_id, msg.session_id, msg.command, sender,
                                          self._services))

    def receiveMsg_ReleaseMe(self, msg: ReleaseMe, sender: Any) -> None:
        slot = self._slots.get(msg.session_id)
        if slot is None or slot.exiting or slot.address != sender \
                or slot.forwarded != msg.handled:
            return  # a command is on its way to that actor; it will ask again when idle
        slot.exiting = True
        self.send(sender, ActorExitRequest())

    def receiveMsg_ChildActorExited(self, msg: ChildActorExited, sender: Any) -> None:
        for session_id, slot in list(self._slots.items()):
            if slot.address != msg.childAddress:
                continue
            del self._slots[session_id]
            if not slot.exiting:
                log.warning("session actor for %s exited unexpectedly", session_id)
            if slot.queued:
                fresh = self._open(session_id)
                for queued, reply_to in slot.queued:
                    self._forward(fresh, queued, reply_to)

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == "ping":
            self.send(sender, "pong")
        elif msg == OWNER_QUESTION:
            self.send(sender, owner_identity())
        elif msg == "stats":
            open_slots = [slot for slot in self._slots.values() if not slot.exiting]
            self.send(sender, {"open_sessions": len(open_slots)})
