"""A thread-to-actor doorbell: worker threads post items, the actor drains them.

Thespian actors must not block inside receiveMessage, so long work (an Agentloop activation, a
model call) runs in threads. Threads may not call the actor's `send`; they put their item in a
queue and ring a socketpair that the actor watches with ThespianWatch. The actor must return
`watch()` from every receiveMessage or Thespian stops watching the socket.
"""

from __future__ import annotations

import queue
import socket
from typing import Any

from thespian.actors import ThespianWatch


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

    def close(self) -> None:
        self._reader.close()
        self._writer.close()
