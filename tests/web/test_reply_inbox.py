"""The reply inbox hands each Reply to the request waiting for it, and only to that one."""

from __future__ import annotations

import queue
import time
from typing import Any

from brain.protocol.messages import Reply
from brain.web.reply_inbox import ReplyInbox


class Endpoint:
    """The inbox's side of a Thespian endpoint: `listen` gives what `arrive` put in."""

    def __init__(self) -> None:
        self.arrivals: queue.Queue[Any] = queue.Queue()
        self._systemBase = type("Base", (), {"transport": type("T", (), {"myAddress": "inbox"})})

    def arrive(self, message: Any) -> None:
        self.arrivals.put(message)

    def listen(self, timeout: float) -> Any:
        try:
            return self.arrivals.get(timeout=min(timeout, 0.05))
        except queue.Empty:
            return None


def test_each_reply_reaches_its_own_request_even_when_ids_repeat() -> None:
    endpoint = Endpoint()
    inbox = ReplyInbox(endpoint)
    try:
        assert inbox.address == "inbox"
        first, second = inbox.expect("req_1"), inbox.expect("req_1")  # a reused x-request-id
        assert first.request_id == "req_1" and second.request_id == "req_1.2"
        endpoint.arrive("not a reply")  # ignored
        endpoint.arrive(Reply("req_1.2", body={"n": 2}))
        endpoint.arrive(Reply("req_1", body={"n": 1}))
        deadline = time.monotonic() + 5
        assert second.wait(deadline).body == {"n": 2}
        assert first.wait(deadline).body == {"n": 1}
    finally:
        inbox.close()


def test_a_request_that_gave_up_drops_its_late_reply() -> None:
    endpoint = Endpoint()
    inbox = ReplyInbox(endpoint)
    try:
        waiter = inbox.expect("req_2")
        assert waiter.wait(time.monotonic() + 0.05) is None  # nothing came in time
        inbox.forget(waiter)
        endpoint.arrive(Reply("req_2", body={"late": True}))
        again = inbox.expect("req_2")  # the same id again: the late reply must not be taken
        assert again.request_id == "req_2.2"
        assert again.wait(time.monotonic() + 0.3) is None
        endpoint.arrive(Reply("req_2.2", body={"own": True}))
        assert again.wait(time.monotonic() + 5).body == {"own": True}
    finally:
        inbox.close()
