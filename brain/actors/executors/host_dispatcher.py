"""The HostDispatcher actor: where host calls wait for a host, and hosts wait for calls.

One per actor system (globalName), created at boot with the executors, so no session's release
can take it down. Executors offer journaled calls here; web workers bring hosts' long polls and
answers. All state lives in a `Ledger` (brain/host/ledger.py); this actor only turns its
decisions into messages and keeps three kinds of timers: a poll's wait, a call's deadline, and
the grace a host gets after it was told of a cancellation. Nothing here is durable: after a
restart the session's recovery records every unanswered call as `unknown`
(docs/concepts.md, "Suspension and recovery").
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from thespian.actors import WakeupMessage

from brain.actors.trace import TracedDispatcher
from brain.host import CANCEL_GRACE_SECS, AnswerRefused, Ledger, Send
from brain.host.ledger import PollAnswer
from brain.protocol.host_calls import (
    HostAnswer,
    HostCallOffer,
    HostCallVerdict,
    HostCancel,
    HostPoll,
)
from brain.protocol.messages import Reply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PollWaitOver:
    request_id: str


@dataclass(frozen=True)
class CallDeadline:
    call_id: str


@dataclass(frozen=True)
class CancelGraceOver:
    call_id: str


class HostDispatcher(TracedDispatcher):
    trace_name = "host_dispatcher"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ledger = Ledger()

    def receiveMsg_HostCallOffer(self, msg: HostCallOffer, sender: Any) -> None:
        self._send_all(self.ledger.offer(msg))
        if msg.call_id in self.ledger.calls and msg.deadline is not None:
            self.wakeupAfter(max(0.0, msg.deadline - time.time()), CallDeadline(msg.call_id))

    def receiveMsg_HostCancel(self, msg: HostCancel, sender: Any) -> None:
        self._send_all(self.ledger.cancel(msg.call_id))
        call = self.ledger.calls.get(msg.call_id)
        if call is not None and call.cancelled:
            self.wakeupAfter(CANCEL_GRACE_SECS, CancelGraceOver(msg.call_id))

    def receiveMsg_HostPoll(self, msg: HostPoll, sender: Any) -> None:
        self._send_all(self.ledger.poll(msg, sender))
        if any(w.poll.request_id == msg.request_id for w in self.ledger.polls):
            self.wakeupAfter(msg.wait_secs, PollWaitOver(msg.request_id))

    def receiveMsg_HostAnswer(self, msg: HostAnswer, sender: Any) -> None:
        try:
            sends = self.ledger.answer(msg.call_id, msg.scope, msg.body)
        except AnswerRefused as refused:
            self.send(sender, Reply(msg.request_id, error_code=refused.code,
                                    error_message=refused.message))
            return
        self._send_all(sends)
        self.send(sender, Reply(msg.request_id, body={"accepted": True}))

    def receiveMsg_WakeupMessage(self, msg: WakeupMessage, sender: Any) -> None:
        payload = msg.payload
        if isinstance(payload, PollWaitOver):
            self._send_all(self.ledger.poll_expired(payload.request_id))
        elif isinstance(payload, CallDeadline):
            self._send_all(self.ledger.expire(payload.call_id))
        elif isinstance(payload, CancelGraceOver):
            self._send_all(self.ledger.expire(payload.call_id, after_cancel=True))

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == "stats":
            self.send(sender, {"pending_calls": len(self.ledger.calls),
                               "waiting_polls": len(self.ledger.polls)})

    def _send_all(self, sends: list[Send]) -> None:
        for item in sends:
            if isinstance(item, PollAnswer):
                self.send(item.reply_to, Reply(item.request_id, body=item.body))
            else:
                if item.outcome is not None:
                    log.info("host call %s: %s (%s)", item.call_id, item.outcome, item.message)
                self.send(item.reply_to, HostCallVerdict(item.call_id, item.answer, item.outcome,
                                                         item.message))
