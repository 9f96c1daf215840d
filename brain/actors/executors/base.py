"""ExecutorActor: the base of the actors that carry out effects (model, Tool, Environment).

An effect that may wait (a model over HTTP, a Tool server, a process) runs in a thread of its
own (reused, brain/actors/worker_threads.py), so the actor keeps taking messages meanwhile; the
thread reports back through the bridge. An effect that never waits (`runs_at_once`: a scripted
model without delays, the `echo` builtin) is carried out on the actor's own thread as its
message is handled: handing it to a thread and back cost more than the effect.

Outcomes ready together go back together: one message per session actor (an OutcomeBatch when
there are several), so their outcomes are committed in one batch there.

An effect still running after the suspension grace (BRAIN_SUSPEND_AFTER_MS), or from its start
when work waits for a session actor (the admission board shows a backlog), is parked: the
session actor is told `Parked`, and the outcome goes to the registry instead, which routes it
to whichever actor holds the session then, opening it again if its turn was suspended
(brain/sessions/suspension.py). Exactly one of the two reaches the actor that sent the effect.
An effect the session actor parked itself as it sent it (`park`: the grace is 0, or it saw the
backlog; brain/actors/park_at_once.py) is the registry's from the start, with no `Parked`.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from brain.actors.admission_board import BoardReader
from brain.actors.bridge import BridgedActor
from brain.actors.park_at_once import park_now
from brain.actors.trace import TracedDispatcher
from brain.actors.worker_threads import WorkerThreads
from brain.effects import Outcome
from brain.protocol.effects import EffectBatch, EffectDone, OutcomeBatch, ParkAll, Parked
from brain.protocol.messages import REGISTRY_GLOBAL_NAME, Services
from brain.settings import Settings


@dataclass(frozen=True)
class ParkDue:
    """The executor's own timer: the effect's suspension grace is over."""

    session_id: str
    started: int


class ExecutorActor(BridgedActor):
    """Runs each effect (in a thread, or at once) and answers its sender with the EffectDone.

    Subclasses implement `run(msg, cancel)` returning the EffectDone; cancellation by
    `CancelEffect(session_id, started)` sets the effect's event. A thread that fails inside
    Brain still answers: `unknown`, since the effect may have happened.
    """

    thread_prefix = "effect"
    parks = True  # a turn's effects may be parked; the Environment executor's are not

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancels: dict[tuple[str, int], threading.Event] = {}
        self.threads = WorkerThreads(self.thread_prefix)
        self._ready: list[tuple[Any, EffectDone]] = []  # outcomes of effects run at once
        self.services: dict[str, Any] = {}
        self.routes: dict[tuple[str, int], Any] = {}  # effect → where its outcome goes
        self._unparked: set[tuple[str, int]] = set()  # running effects that may still park
        settings = Settings.from_env()
        self._suspend_after_ms = settings.suspend_after_ms
        self._board = BoardReader(settings.data_path)

    def receiveMsg_Services(self, msg: Services, sender: Any) -> None:
        self.services = dict(msg.addresses)

    def start_effect(self, msg: Any, sender: Any) -> None:
        cancel = threading.Event()
        parked_by_sender = getattr(msg, "park", False)  # brain/actors/park_at_once.py
        if parked_by_sender:
            registry = self.services.get(REGISTRY_GLOBAL_NAME)
            if registry is None:  # handed out at boot, before any session exists
                logging.getLogger(type(self).__module__).error(
                    "effect %s/%s parked before this executor knows the registry",
                    msg.session_id, msg.started)
            else:
                sender = registry  # its outcome goes there, even one carried out at once
        if self.runs_at_once(msg):
            self._ready.append((sender, self._guarded_run(msg, cancel)))
            return
        key = (msg.session_id, msg.started)
        self.cancels[key] = cancel
        self.routes[key] = sender

        def body() -> None:
            self.bridge.post((sender, self._guarded_run(msg, cancel)))

        self.threads.submit(body, name=f"{self.thread_prefix}-{msg.session_id}-{msg.started}")
        if parked_by_sender:
            return  # the session actor decided; nothing left to decide here
        if self.parks and self.services.get(REGISTRY_GLOBAL_NAME) is not None:
            self._unparked.add(key)
            if park_now(self._suspend_after_ms, self._board):
                self._park(key)
            else:
                self.wakeupAfter(self._suspend_after_ms / 1000.0, ParkDue(*key))

    def _park(self, key: tuple[str, int]) -> None:
        """The effect's outcome goes to the registry from now on; its session actor hears so."""
        if key not in self._unparked:
            return  # finished already, or parked already
        self._unparked.discard(key)
        actor = self.routes[key]
        self.routes[key] = self.services[REGISTRY_GLOBAL_NAME]
        self.send(actor, Parked(*key))

    def receiveMsg_WakeupMessage(self, msg: Any, sender: Any) -> None:
        if isinstance(msg.payload, ParkDue):
            self._park((msg.payload.session_id, msg.payload.started))

    def receiveMsg_ParkAll(self, msg: ParkAll, sender: Any) -> None:
        for key in list(self._unparked):
            self._park(key)

    def _guarded_run(self, msg: Any, cancel: threading.Event) -> EffectDone:
        try:
            return self.run(msg, cancel)
        except Exception as exc:
            logging.getLogger(type(self).__module__).exception(
                "effect %s/%s failed inside Brain", msg.session_id, msg.started)
            message = f"internal error ({type(exc).__name__})"
            return EffectDone(msg.session_id, msg.started, Outcome.UNKNOWN,
                              result={"content": message, "is_error": True},
                              error={"message": message})

    def runs_at_once(self, msg: Any) -> bool:
        """Whether this effect never waits, so it runs on the actor's thread (see above)."""
        return False

    def run(self, msg: Any, cancel: threading.Event) -> Any:
        raise NotImplementedError

    def receiveMessage(self, message: Any, sender: Any) -> Any:
        watch = super().receiveMessage(message, sender)
        if self._ready:  # effects carried out while handling it
            ready, self._ready = self._ready, []
            self._send_outcomes(ready)
        return watch

    def receiveMsg_CancelEffect(self, msg: Any, sender: Any) -> None:
        cancel = self.cancels.get((msg.session_id, msg.started))
        if cancel is not None:
            cancel.set()

    def receiveMsg_EffectBatch(self, msg: EffectBatch, sender: Any) -> None:
        # In order, each as if it had come alone; past the tracing, which already wrote a
        # line for each.
        for each in msg.messages:
            self.dispatch_logged(super(TracedDispatcher, self).receiveMessage, each, sender)

    def receiveMsg_WatchMessage(self, msg: Any, sender: Any) -> None:
        """Effects that finished since the last pass go back together: one message per
        session actor, so their outcomes are committed in one batch there."""
        finished = []
        for item in self.bridge.drain():
            outcome = self.handle_posted(item)
            if outcome is not None:
                finished.append(outcome)
        self._send_outcomes(finished)

    def _send_outcomes(self, finished: list[tuple[Any, EffectDone]]) -> None:
        outgoing: list[tuple[Any, list[EffectDone]]] = []
        for reply_to, done in finished:
            for to, dones in outgoing:
                if to == reply_to:
                    dones.append(done)
                    break
            else:
                outgoing.append((reply_to, [done]))
        for reply_to, dones in outgoing:
            self.send(reply_to, dones[0] if len(dones) == 1 else OutcomeBatch(tuple(dones)))

    def handle_posted(self, item: Any) -> tuple[Any, EffectDone] | None:
        """One item a thread posted: by default a finished effect's `(session actor, done)`,
        returned to be sent; None for an item handled here."""
        reply_to, done = item
        key = (done.session_id, done.started)
        self.cancels.pop(key, None)
        self._unparked.discard(key)
        return self.routes.pop(key, reply_to), done
