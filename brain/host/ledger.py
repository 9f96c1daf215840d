"""The HostDispatcher's state: pending host calls, waiting polls, and every rule between them.

Kept apart from the actor so the rules read (and are tested) without a message in sight. Each
method returns what must be sent, as `PollAnswer`s (to a waiting web request) and `Verdict`s (to
the executor whose thread waits for the call); the actor sends them and keeps the timers.

Exactly once: a call is marked delivered when it is put into a poll answer and is never put into
another. Whether that answer reached the host is unknowable here, so from then on a missing
answer is `unknown`, never `timeout`. A call no poll ever took is `timeout` or `cancelled`, and
nothing was sent.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from brain.host.protocol import AnswerShapeError, check_environment_answer, check_tool_answer

ANSWERED_MEMORY_SECS = 3600.0  # a late second answer is told 409, not 404, for this long
ANSWERED_MEMORY_MAX = 100_000
EARLY_CANCEL_MEMORY_SECS = 60.0


@dataclass(frozen=True)
class PollAnswer:
    """`body` = `{calls, cancel}` for the poll `request_id` waiting at `reply_to`."""

    reply_to: Any
    request_id: str
    body: dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    """The end of one call, for the executor at `reply_to`: an answer or a failure outcome."""

    reply_to: Any
    call_id: str
    answer: dict[str, Any] | None = None
    outcome: str | None = None
    message: str = ""


Send = PollAnswer | Verdict


class AnswerRefused(Exception):
    """A host answer that is not taken: `code` is the HTTP API error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class PendingCall:
    """One offered call (`offer` is a HostCallOffer) and what has happened to it so far."""

    offer: Any
    delivered: bool = False
    host_id: str | None = None  # the host_id of the poll that took it
    cancelled: bool = False
    cancel_told: bool = False

    def describe(self) -> dict[str, Any]:
        """The call as a poll answer lists it."""
        offer = self.offer
        item: dict[str, Any] = {"call_id": offer.call_id, "kind": offer.kind, "name": offer.name,
                                "session_id": offer.session_id, "sequence": offer.started,
                                "deadline": offer.deadline}
        if offer.kind == "tool":
            item["input"] = offer.payload
        else:
            item["op"] = offer.op
            item["request"] = offer.payload
        return item


@dataclass
class WaitingPoll:
    poll: Any  # a HostPoll
    reply_to: Any
    since: float = field(default_factory=time.monotonic)


def _serves(poll: Any, call: PendingCall) -> bool:
    """Whether `poll` may take `call`: a name it serves, in a session it may see."""
    offer = call.offer
    if poll.scope is not None and poll.scope != offer.session_id:
        return False
    names = poll.tools if offer.kind == "tool" else poll.environments
    return offer.name in names


class Ledger:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.calls: dict[str, PendingCall] = {}  # insertion order: oldest offered first
        self.polls: list[WaitingPoll] = []
        self._answered: OrderedDict[str, float] = OrderedDict()
        self._early_cancels: dict[str, float] = {}

    # --- calls ------------------------------------------------------------------------------

    def offer(self, offer: Any) -> list[Send]:
        """A new call: hand it to a waiting poll that serves it, if there is one."""
        self._forget_old()
        if offer.call_id in self.calls or offer.call_id in self._answered:
            return []  # offered twice: the first offer stands, nothing is sent twice
        if self._early_cancels.pop(offer.call_id, None) is not None:
            return [Verdict(offer.reply_to, offer.call_id, outcome="cancelled",
                            message="the host call was cancelled before any host took it; "
                                    "nothing was sent")]
        self.calls[offer.call_id] = PendingCall(offer)
        return self._serve_waiting()

    def cancel(self, call_id: str) -> list[Send]:
        """Brain cancelled the effect. Untaken: `cancelled` now. Taken: tell its host."""
        call = self.calls.get(call_id)
        if call is None:
            if call_id not in self._answered:
                # The cancel overtook the offer on its way here: refuse the offer when it comes.
                self._early_cancels[call_id] = self._clock()
            return []
        if not call.delivered:
            del self.calls[call_id]
            return [Verdict(call.offer.reply_to, call_id, outcome="cancelled",
                            message="the host call was cancelled before any host took it; "
                                    "nothing was sent")]
        if call.cancelled:
            return []
        call.cancelled = True
        return self._serve_waiting()

    def expire(self, call_id: str, *, after_cancel: bool = False) -> list[Send]:
        """The deadline (or, once the host was told of a cancel, its grace) ran out."""
        call = self.calls.get(call_id)
        if call is None or (after_cancel and not call.cancelled):
            return []
        del self.calls[call_id]
        if not call.delivered:
            return [Verdict(call.offer.reply_to, call_id, outcome="timeout",
                            message="no host took the call before its deadline; "
                                    "nothing was sent")]
        if after_cancel:
            message = "the host was told of the cancellation and did not answer in time"
        else:
            message = "a host took the call and did not answer before its deadline"
        return [Verdict(call.offer.reply_to, call_id, outcome="unknown", message=message)]

    def answer(self, call_id: str, scope: str | None, body: Any) -> list[Send]:
        """A host's answer. Raises AnswerRefused (not_found, already_answered, invalid_request)."""
        self._forget_old()
        call = self.calls.get(call_id)
        if call is None or not call.delivered or (
                scope is not None and scope != call.offer.session_id):
            if call_id in self._answered and call is None:
                raise AnswerRefused("already_answered", "this call was already answered")
            raise AnswerRefused("not_found", "no such host call is waiting for an answer")
        check = check_tool_answer if call.offer.kind == "tool" else check_environment_answer
        try:
            normalized = check(body)
        except AnswerShapeError as exc:
            raise AnswerRefused("invalid_request", str(exc)) from None
        del self.calls[call_id]
        self._answered[call_id] = self._clock()
        return [Verdict(call.offer.reply_to, call_id, answer=normalized)]

    # --- polls ------------------------------------------------------------------------------

    def poll(self, poll: Any, reply_to: Any) -> list[Send]:
        """Answer at once when there is work (or the host will not wait); else keep it waiting.

        A host has at most one waiting poll: a newer one with the same `host_id` answers the
        older at once, empty, so a host that stops (or polls again after losing its
        connection) never leaves a stale poll behind to swallow a call.
        """
        sends: list[Send] = []
        if poll.host_id is not None:
            for waiting in [w for w in self.polls if w.poll.host_id == poll.host_id]:
                self.polls.remove(waiting)
                sends.append(self._empty(waiting))
        body = self._work_for(poll)
        if body is not None or poll.wait_secs <= 0:
            sends.append(PollAnswer(reply_to, poll.request_id,
                                    body or {"calls": [], "cancel": []}))
        else:
            self.polls.append(WaitingPoll(poll, reply_to, self._clock()))
        return sends

    def poll_expired(self, request_id: str) -> list[Send]:
        """The poll's wait_secs passed with nothing for it: answer it empty."""
        for waiting in self.polls:
            if waiting.poll.request_id == request_id:
                self.polls.remove(waiting)
                return [self._empty(waiting)]
        return []

    def _serve_waiting(self) -> list[Send]:
        sends: list[Send] = []
        for waiting in list(self.polls):
            body = self._work_for(waiting.poll)
            if body is not None:
                self.polls.remove(waiting)
                sends.append(PollAnswer(waiting.reply_to, waiting.poll.request_id, body))
        return sends

    def _work_for(self, poll: Any) -> dict[str, Any] | None:
        """Take undelivered calls (oldest first, up to max_calls) and cancel notices for `poll`.

        Taking marks them: a call is delivered, and a cancel notice told, exactly once.
        """
        calls: list[dict[str, Any]] = []
        cancel: list[str] = []
        for call in self.calls.values():
            if not _serves(poll, call):
                continue
            if not call.delivered and len(calls) < poll.max_calls:
                call.delivered = True
                call.host_id = poll.host_id
                calls.append(call.describe())
            elif call.cancelled and not call.cancel_told \
                    and (call.host_id is None or call.host_id == poll.host_id):
                call.cancel_told = True
                cancel.append(call.offer.call_id)
        if not calls and not cancel:
            return None
        return {"calls": calls, "cancel": cancel}

    @staticmethod
    def _empty(waiting: WaitingPoll) -> PollAnswer:
        return PollAnswer(waiting.reply_to, waiting.poll.request_id, {"calls": [], "cancel": []})

    def _forget_old(self) -> None:
        now = self._clock()
        while self._answered and (len(self._answered) > ANSWERED_MEMORY_MAX
                                  or now - next(iter(self._answered.values()))
                                  > ANSWERED_MEMORY_SECS):
            self._answered.popitem(last=False)
        for call_id, at in list(self._early_cancels.items()):
            if now - at > EARLY_CANCEL_MEMORY_SECS:
                del self._early_cancels[call_id]
