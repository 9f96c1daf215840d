"""The executor side of host calls: hand a call to the HostDispatcher, wake the thread on its end.

An effect runs in a thread of its executor, but only the actor can send and receive messages.
So the thread posts its `HostCallOffer` through the bridge and waits on a queue of its own; the
actor sends the offer to the dispatcher (unless the effect was cancelled meanwhile: then nothing
is sent), forwards a cancellation as `HostCancel`, and puts the dispatcher's `HostCallVerdict`
into that queue. The dispatcher decides every outcome; the thread's own bound only keeps it from
waiting for ever on a dispatcher that is gone.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

from brain.actors.executors.base import ExecutorActor
from brain.host import CANCEL_GRACE_SECS, HostCallFailed, HostRunner, call_id_of
from brain.protocol.effects import CancelEffect
from brain.protocol.host_calls import HostCallOffer, HostCallVerdict, HostCancel
from brain.protocol.messages import HOST_DISPATCHER_GLOBAL_NAME, SharedActorReplaced

VERDICT_MARGIN_SECS = 3.0
"""How long past the deadline (or the cancel grace) a thread still waits for the dispatcher."""
WAIT_SLICE_SECS = 0.25


class HostCallingExecutor(ExecutorActor):
    """An executor whose effects a host may perform (the ToolExecutor, EnvironmentExecutor)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answers: dict[str, queue.SimpleQueue] = {}  # call id → the waiting thread's queue
        self._answers_lock = threading.Lock()
        self._offered: set[str] = set()  # call ids sent to the dispatcher (actor thread only)

    def host_runner(self, session_id: str, started: int) -> HostRunner:
        """The runner `run_tool` / `open_environment` call for the effect `started`; it runs in
        the effect's thread and returns the host's answer or raises HostCallFailed."""

        def run(kind: str, name: str, op: str | None, payload: Any, deadline: float | None,
                cancel: threading.Event) -> dict[str, Any]:
            call_id = call_id_of(session_id, started)
            answers: queue.SimpleQueue = queue.SimpleQueue()
            with self._answers_lock:
                self._answers[call_id] = answers
            try:
                self.bridge.post(HostCallOffer(call_id, kind, name, session_id, started, op,
                                               payload, deadline, self.myAddress))
                verdict = _await_verdict(call_id, answers, deadline, cancel)
            finally:
                with self._answers_lock:
                    self._answers.pop(call_id, None)
            if verdict.answer is None:
                raise HostCallFailed(verdict.outcome or "unknown", verdict.message)
            return verdict.answer

        return run

    # --- actor thread -----------------------------------------------------------------------

    def handle_posted(self, item: Any) -> tuple[Any, Any] | None:
        if isinstance(item, HostCallOffer):
            self._offer(item)
            return None
        _, done = item
        self._offered.discard(call_id_of(done.session_id, done.started))
        return super().handle_posted(item)

    def _offer(self, offer: HostCallOffer) -> None:
        cancel = self.cancels.get((offer.session_id, offer.started))
        dispatcher = self.services.get(HOST_DISPATCHER_GLOBAL_NAME)
        if cancel is not None and cancel.is_set():
            self._settle(HostCallVerdict(offer.call_id, outcome="cancelled",
                                         message="the host call was cancelled before it was "
                                                 "offered to a host; nothing was sent"))
        elif dispatcher is None:
            self._settle(HostCallVerdict(offer.call_id, outcome="error",
                                         message="no host dispatcher is running; "
                                                 "nothing was sent"))
        else:
            self._offered.add(offer.call_id)
            self.send(dispatcher, offer)

    def receiveMsg_SharedActorReplaced(self, msg: SharedActorReplaced, sender: Any) -> None:
        """A dead HostDispatcher took the calls offered to it along: each ends `unknown` (a host
        may have carried it out), and later calls go to its replacement."""
        self.receiveMsg_Services(msg, sender)
        if msg.name != HOST_DISPATCHER_GLOBAL_NAME:
            return
        for call_id in sorted(self._offered):
            self._settle(HostCallVerdict(call_id, outcome="unknown",
                                         message="the host dispatcher exited while this call "
                                                 "was offered; a host may have carried it out"))
        self._offered.clear()

    def receiveMsg_HostCallVerdict(self, msg: HostCallVerdict, sender: Any) -> None:
        self._offered.discard(msg.call_id)
        self._settle(msg)

    def receiveMsg_CancelEffect(self, msg: CancelEffect, sender: Any) -> None:
        super().receiveMsg_CancelEffect(msg, sender)
        call_id = call_id_of(msg.session_id, msg.started)
        if call_id in self._offered:
            self.send(self.services[HOST_DISPATCHER_GLOBAL_NAME], HostCancel(call_id))

    def _settle(self, verdict: HostCallVerdict) -> None:
        with self._answers_lock:
            answers = self._answers.get(verdict.call_id)
        if answers is not None:
            answers.put(verdict)


def _await_verdict(call_id: str, answers: queue.SimpleQueue, deadline: float | None,
                   cancel: threading.Event) -> HostCallVerdict:
    """The dispatcher's verdict; `unknown` if none comes well after it was due."""
    limit = None if deadline is None \
        else time.monotonic() + (deadline - time.time()) + VERDICT_MARGIN_SECS
    cancelled_at: float | None = None
    while True:
        try:
            return answers.get(timeout=WAIT_SLICE_SECS)
        except queue.Empty:
            pass
        now = time.monotonic()
        if cancel.is_set():
            cancelled_at = cancelled_at or now
            limit = min(limit or float("inf"), cancelled_at + CANCEL_GRACE_SECS
                        + VERDICT_MARGIN_SECS)
        if limit is not None and now >= limit:
            return HostCallVerdict(call_id, outcome="unknown",
                                   message="the host dispatcher gave no verdict in time")
