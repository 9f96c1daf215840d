"""The Registry actor: one per actor system (globalName), the router to session actors.

It opens a session actor on demand, forwards every command to it, and grants a session actor's
request to be released only when nothing it has not yet seen is on the way. It never touches a
journal and never waits on anybody, so it stays responsive however slow a session is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from thespian.actors import ActorExitRequest, ActorTypeDispatcher, ChildActorExited

from brain.actors.messages import Delivered, ReleaseMe, Services, ToSession
from brain.actors.trace import trace_message

log = logging.getLogger(__name__)


@dataclass
class SessionSlot:
    address: Any
    forwarded: int = 0


class Registry(ActorTypeDispatcher):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slots: dict[str, SessionSlot] = {}
        self._services: dict[str, Any] = {}

    def receiveMsg_Services(self, msg: Services, sender: Any) -> None:
        self._services = dict(msg.addresses)

    def receiveMsg_ToSession(self, msg: ToSession, sender: Any) -> None:
        trace_message("registry", msg)
        slot = self._slots.get(msg.session_id)
        if slot is None:
            from brain.actors.session import SessionActor

            slot = SessionSlot(self.createActor(SessionActor))
            self._slots[msg.session_id] = slot
        slot.forwarded += 1
        self.send(slot.address, Delivered(msg.request_id, msg.session_id, msg.command, sender,
                                          self._services))

    def receiveMsg_ReleaseMe(self, msg: ReleaseMe, sender: Any) -> None:
        slot = self._slots.get(msg.session_id)
        if slot is None or slot.address != sender or slot.forwarded != msg.handled:
            return  # a command is on its way to that actor; it will ask again when idle
        del self._slots[msg.session_id]
        self.send(sender, ActorExitRequest())

    def receiveMsg_ChildActorExited(self, msg: ChildActorExited, sender: Any) -> None:
        for session_id, slot in list(self._slots.items()):
            if slot.address == msg.childAddress:
                log.warning("session actor for %s exited unexpectedly", session_id)
                del self._slots[session_id]

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == "ping":
            self.send(sender, "pong")
        elif msg == "stats":
            self.send(sender, {"open_sessions": len(self._slots)})
