"""One Thespian endpoint per web worker that every answer to a routed command comes back to.

A sync send waits for its whole turn, seconds when the model takes seconds. If each waiting
request held an endpoint of its own, a fleet of a thousand waiting sends would make a thousand
endpoints per worker, each a listening socket and a connection to the registry, and a
connection from every session actor that answers one. Thespian's transport walks all of its
sockets at every pass of its loop, so the registry's and the session actors' cost per message
grew with the number of requests waiting anywhere (measured: the registry held ~1,040
descriptors with 1,000 sends waiting).

So a request sends its `ToSession` through a pooled endpoint, which is free again as soon as the
message is sent, naming this inbox as `reply_to`; the registry and the session actor answer
there. One loop (a greenlet in a gevent worker, a thread elsewhere) is the only user of the
inbox's endpoint, so stack hazard 2 (greenlets sharing an endpoint receive each other's
replies) cannot arise: replies are handed to the waiting request by request id. An id that is
already waiting (a client reusing its x-request-id at once), or whose request gave up waiting
(its late reply may still come), is made unique for the next ask, so a late reply is dropped and
never taken for another request's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Any

from brain.actors.thespian.endpoint import endpoint_address
from brain.protocol.messages import Reply

log = logging.getLogger(__name__)

LISTEN_SECS = 1.0  # how long one listen waits before the loop checks that it should go on
FAILURE_PAUSE_SECS = 0.2
GAVE_UP_KEPT = 4096  # ids of requests that stopped waiting, remembered this many at most


class Waiter:
    """One request's wait for its Reply."""

    __slots__ = ("request_id", "reply", "_arrived")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.reply: Reply | None = None
        self._arrived = threading.Event()

    def deliver(self, reply: Reply) -> None:
        self.reply = reply
        self._arrived.set()

    def wait(self, deadline: float) -> Reply | None:
        """The Reply, or None when none came by `deadline` (monotonic)."""
        self._arrived.wait(max(0.0, deadline - time.monotonic()))
        return self.reply


class ReplyInbox:
    """The endpoint answers come back to, and the requests waiting for them."""

    def __init__(self, endpoint: Any) -> None:
        self._endpoint = endpoint
        self.address = endpoint_address(endpoint)
        self._waiting: dict[str, Waiter] = {}
        self._gave_up: OrderedDict[str, None] = OrderedDict()  # their replies may still come
        self._lock = threading.Lock()
        self._closed = False
        self._loop = threading.Thread(target=self._run, name="brain-reply-inbox", daemon=True)
        self._loop.start()

    def expect(self, request_id: str) -> Waiter:
        """A Waiter for the answer to `request_id` (made unique while another one waits)."""
        with self._lock:
            key, n = request_id, 1
            while key in self._waiting or key in self._gave_up:
                n += 1
                key = f"{request_id}.{n}"
            waiter = self._waiting[key] = Waiter(key)
            return waiter

    def forget(self, waiter: Waiter) -> None:
        """The request stops waiting (answered or not)."""
        with self._lock:
            if self._waiting.get(waiter.request_id) is waiter:
                del self._waiting[waiter.request_id]
            if waiter.reply is None:
                self._gave_up[waiter.request_id] = None
                if len(self._gave_up) > GAVE_UP_KEPT:
                    self._gave_up.popitem(last=False)

    def close(self) -> None:
        self._closed = True

    def _run(self) -> None:
        while not self._closed:
            try:
                message = self._endpoint.listen(LISTEN_SECS)
            except Exception:  # the loop must outlive a bad message or a transport hiccup
                log.exception("reply inbox: listen failed")
                time.sleep(FAILURE_PAUSE_SECS)
                continue
            if isinstance(message, Reply):
                with self._lock:
                    waiter = self._waiting.pop(message.request_id, None)
                if waiter is not None:
                    waiter.deliver(message)
            elif message is not None:
                log.debug("reply inbox: ignoring %s", type(message).__name__)
