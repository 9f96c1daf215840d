"""A thread-to-actor doorbell: worker threads post items, the actor drains them.

Thespian actors must not block inside receiveMessage, so long work (an Agentloop activation, a
model call) runs in threads. Threads may not call the actor's `send`; they put their item in a
queue and ring a socketpair that the actor watches with ThespianWatch. The actor must return
`watch()` from every receiveMessage or Thespian stops watching the socket.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
from typing import Any

from thespian.actors import ThespianWatch

from brain.actors.messages import EffectBatch, EffectDone, OutcomeBatch
from brain.actors.trace import TracedDispatcher
from brain.actors.worker_threads import WorkerThreads
from brain.effects import Outcome


class ThreadBridge:
    def __init__(self) -> None:
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._items: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def post(self, item: Any) -> None:
        """Called from any thread: queue the item, then ring the actor."""
        self._items.put(item)
        try:
            self._writer.send(b"\x01")
        except OSError:
            pass  # the actor is gone; nothing left to wake

    def drain(self) -> list[Any]:
        """Called by the actor on a WatchMessage: every item posted so far."""
        try:
            while self._reader.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        items = []
        while True:
            try:
                items.append(self._items.get_nowait())
            except queue.Empty:
                return items

    def watch(self) -> ThespianWatch:
        return ThespianWatch([self._reader.fileno()])

    # There is deliberately no close(): the bridge lives exactly as long as its process. Thespian
    # does not take a new watch list from the receiveMessage that handles ActorExitRequest, so
    # while it drains the actor's goodbye messages it still selects on the last fd it was given.
    # Were that fd closed, Thespian's next outgoing socket would get the same number (the lowest
    # free one) and be put in the same selector twice: `KeyError: 'N (FD N) is already
    # registered'`, the drain aborted and the goodbye messages lost.


class BridgedActor(TracedDispatcher):
    """An actor whose threads report back through a ThreadBridge.

    `receiveMessage` returns the bridge's watch after every message, also when a handler
    raised: Thespian drops the watch of a receiveMessage that returns anything else, and the
    actor would then never hear from its threads again.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bridge = ThreadBridge()

    def receiveMessage(self, message: Any, sender: Any) -> Any:
        try:
            super().receiveMessage(message, sender)
        except Exception:
            logging.getLogger(type(self).__module__).exception(
                "%s failed on %s", type(self).__name__, type(message).__name__)
        return self.bridge.watch()


class ExecutorActor(BridgedActor):
    """Runs each effect in a thread of its own (reused, brain/actors/worker_threads.py) and
    answers its sender with the EffectDone.

    Subclasses implement `run(msg, cancel)` returning the EffectDone; cancellation by
    `CancelEffect(session_id, started)` sets the effect's event. A thread that fails inside
    Brain still answers: `unknown`, since the effect may have happened.
    """

    thread_prefix = "effect"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancels: dict[tuple[str, int], threading.Event] = {}
        self.threads = WorkerThreads(self.thread_prefix)

    def start_effect(self, msg: Any, sender: Any) -> None:
        cancel = threading.Event()
        self.cancels[(msg.session_id, msg.started)] = cancel

        def body() -> None:
            try:
                done = self.run(msg, cancel)
            except Exception as exc:
                logging.getLogger(type(self).__module__).exception(
                    "effect %s/%s failed inside Brain", msg.session_id, msg.started)
                message = f"internal error ({type(exc).__name__})"
                done = EffectDone(msg.session_id, msg.started, Outcome.UNKNOWN,
                                  result={"content": message, "is_error": True},
                                  error={"message": message})
            self.bridge.post((sender, done))

        self.threads.submit(body, name=f"{self.thread_prefix}-{msg.session_id}-{msg.started}")

    def run(self, msg: Any, cancel: threading.Event) -> Any:
        raise NotImplementedError

    def receiveMsg_CancelEffect(self, msg: Any, sender: Any) -> None:
        cancel = self.cancels.get((msg.session_id, msg.started))
        if cancel is not None:
            cancel.set()

    def receiveMsg_EffectBatch(self, msg: EffectBatch, sender: Any) -> None:
        for each in msg.messages:  # in order, each as if it had come alone
            try:  # (past the tracing, which already wrote a line for each)
                super(TracedDispatcher, self).receiveMessage(each, sender)
            except Exception:
                logging.getLogger(type(self).__module__).exception(
                    "%s failed on %s", type(self).__name__, type(each).__name__)

    def receiveMsg_WatchMessage(self, msg: Any, sender: Any) -> None:
        """Effects that finished since the last pass go back together: one message per
        session actor, so their outcomes are committed in one batch there."""
        outgoing: list[tuple[Any, list[EffectDone]]] = []
        for item in self.bridge.drain():
            finished = self.handle_posted(item)
            if finished is None:
                continue
            reply_to, done = finished
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
