"""ExecutorActor: the base of the actors that carry out effects (model, Tool, Environment).

An effect that may wait (a model over HTTP, a Tool server, a process) runs in a thread of its
own (reused, brain/actors/worker_threads.py), so the actor keeps taking messages meanwhile; the
thread reports back through the bridge. An effect that never waits (`runs_at_once`: a scripted
model without delays, the `echo` builtin) is carried out on the actor's own thread as its
message is handled: handing it to a thread and back cost more than the effect.

Outcomes ready together go back together: one message per session actor (an OutcomeBatch when
there are several), so their outcomes are committed in one batch there.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from brain.actors.bridge import BridgedActor
from brain.actors.messages import EffectBatch, EffectDone, OutcomeBatch
from brain.actors.trace import TracedDispatcher
from brain.actors.worker_threads import WorkerThreads
from brain.effects import Outcome


class ExecutorActor(BridgedActor):
    """Runs each effect (in a thread, or at once) and answers its sender with the EffectDone.

    Subclasses implement `run(msg, cancel)` returning the EffectDone; cancellation by
    `CancelEffect(session_id, started)` sets the effect's event. A thread that fails inside
    Brain still answers: `unknown`, since the effect may have happened.
    """

    thread_prefix = "effect"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancels: dict[tuple[str, int], threading.Event] = {}
        self.threads = WorkerThreads(self.thread_prefix)
        self._ready: list[tuple[Any, EffectDone]] = []  # outcomes of effects run at once

    def start_effect(self, msg: Any, sender: Any) -> None:
        cancel = threading.Event()
        if self.runs_at_once(msg):
            self._ready.append((sender, self._guarded_run(msg, cancel)))
            return
        self.cancels[(msg.session_id, msg.started)] = cancel

        def body() -> None:
            self.bridge.post((sender, self._guarded_run(msg, cancel)))

        self.threads.submit(body, name=f"{self.thread_prefix}-{msg.session_id}-{msg.started}")

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
        self.cancels.pop((done.session_id, done.started), None)
        return reply_to, done
