"""The receiving side of live hints, one per web worker process.

A worker binds one datagram socket and keeps, per session, the set of its SSE subscriptions,
and marks each session it follows so that publishers send it that session's hints
(brain/live/followers.py). A commit hint wakes that session's subscribers only. Each then
takes the new Events from the session's `SessionTail` (read from the journal once for all of
them), or reads the journal from its own cursor when it is further behind: one session's
traffic or one slow subscriber never holds up another.

Deltas and commit hints share one queue per subscription, in arrival order. The executor sends
a call's deltas before the session commits its outcome, so a subscriber that reads the journal
only up to each hint it takes sees every delta before the terminal record that follows it. The
queue is bounded: a subscriber too slow for it loses the oldest items, which costs at most live
deltas (they are live-only by definition); committed Events are re-read from the journal.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import socket
import threading
from collections import deque
from pathlib import Path
from typing import Any

from brain.durable_dirs import make_dirs_durable
from brain.live.followers import forget_follower, live_dir, mark_following
from brain.web.background import gevent_active, spawn_background
from brain.web.session_tail import SessionTail

log = logging.getLogger(__name__)

MAX_QUEUED_ITEMS = 4096
RECEIVE_BYTES = 256 * 1024


class Subscription:
    def __init__(self, session_id: str, event_factory: Any) -> None:
        self.session_id = session_id
        self._wake = event_factory()
        self.items: deque[tuple[str, Any]] = deque(maxlen=MAX_QUEUED_ITEMS)

    def notify(self) -> None:
        self._wake.set()

    def wait(self, timeout: float) -> bool:
        """True when woken by a hint, False after `timeout` seconds of silence."""
        woken = self._wake.wait(timeout)
        self._wake.clear()
        return bool(woken)

    def take(self) -> list[tuple[str, Any]]:
        """Queued `("delta", {started, delta})` and `("commit", sequence)` items, in order."""
        items = []
        while self.items:
            items.append(self.items.popleft())
        return items


class LiveHub:
    def __init__(self, data_dir: Path) -> None:
        self._dir = live_dir(data_dir)
        self._subs: dict[str, set[Subscription]] = {}
        self._tails: dict[str, SessionTail] = {}  # per session with subscribers in this worker
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self.path: Path | None = None

    def start(self) -> None:
        """Bind this worker's socket and start reading hints (call once, in the worker)."""
        if self._sock is not None:
            return
        make_dirs_durable(self._dir)
        self.path = self._dir / f"w{os.getpid()}-{os.urandom(4).hex()}.sock"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(str(self.path))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self._sock = sock
        atexit.register(self.close)
        spawn_background(self._read_loop, "live-hub")

    def close(self) -> None:
        if self.path is not None:
            with self._lock:
                followed = list(self._subs)
            for session_id in followed:
                forget_follower(self._dir, session_id, self.path.name)
            try:
                self.path.unlink()
            except OSError:
                pass
        if self._sock is not None:
            self._sock.close()

    def subscribe(self, session_id: str) -> Subscription:
        """Subscribe before reading the journal: hints for commits after this call reach it."""
        subscription = Subscription(session_id, _event_factory())
        with self._lock:
            if session_id not in self._subs and self.path is not None:
                mark_following(self._dir, session_id, self.path.name)
            self._subs.setdefault(session_id, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            subs = self._subs.get(subscription.session_id)
            if subs is not None:
                subs.discard(subscription)
                if not subs:
                    del self._subs[subscription.session_id]
                    self._tails.pop(subscription.session_id, None)
                    if self.path is not None:
                        forget_follower(self._dir, subscription.session_id, self.path.name)

    def tail(self, session_id: str) -> SessionTail:
        """The shared tail of a session's newest Events, kept while it has subscribers here."""
        with self._lock:
            tail = self._tails.get(session_id)
            if tail is None:
                tail = self._tails[session_id] = SessionTail()
            return tail

    def subscriber_count(self) -> int:
        with self._lock:
            return sum(len(s) for s in self._subs.values())

    def dispatch(self, message: dict[str, Any]) -> None:
        with self._lock:
            subs = list(self._subs.get(message.get("s", ""), ()))
        if "d" in message:
            item: tuple[str, Any] = ("delta", message["d"])
        elif isinstance(message.get("p"), dict):
            item = ("progress", message["p"])
        elif isinstance(message.get("q"), int):
            item = ("commit", message["q"])
        else:
            return
        for subscription in subs:
            subscription.items.append(item)
            subscription.notify()

    def _read_loop(self) -> None:
        assert self._sock is not None
        while True:
            try:
                data = self._sock.recv(RECEIVE_BYTES)
            except OSError:
                return
            if not self._subs:
                continue  # nobody follows a session in this worker: nothing to parse for
            try:
                message = json.loads(data)
            except ValueError:
                continue
            if isinstance(message, dict):
                self.dispatch(message)


def _event_factory() -> Any:
    if gevent_active():
        from gevent.event import Event

        return Event
    return threading.Event
