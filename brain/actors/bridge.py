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
from typing import Any

from thespian.actors import ThespianWatch

from brain.actors.trace import TracedDispatcher


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
        self.dispatch_logged(super().receiveMessage, message, sender)
        return self.bridge.watch()

    def dispatch_logged(self, dispatch: Any, message: Any, sender: Any) -> None:
        """`dispatch(message, sender)`; a handler that raised is logged, never let out."""
        try:
            dispatch(message, sender)
        except Exception:
            logging.getLogger(type(self).__module__).exception(
                "%s failed on %s", type(self).__name__, type(message).__name__)
