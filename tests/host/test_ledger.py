"""The HostDispatcher's rules without actors: delivery once, outcomes, notices, polls."""

from __future__ import annotations

import pytest

from brain.host import AnswerRefused, Ledger
from brain.host.ledger import PollAnswer
from brain.protocol.host_calls import HostCallOffer, HostPoll


def offer(seq: int = 1, name: str = "hosted", session: str = "s1") -> HostCallOffer:
    return HostCallOffer(f"{session}-{seq}", "tool", name, session, seq, None, {"n": seq},
                         None, reply_to="executor")


def poll(request_id: str = "p", host_id: str | None = "h1", wait: float = 5.0,
         scope: str | None = None, max_calls: int = 16) -> HostPoll:
    return HostPoll(request_id, ("hosted",), (), scope, host_id, max_calls, wait)


def test_a_call_goes_to_one_poll_and_is_answered_once() -> None:
    ledger = Ledger()
    assert ledger.poll(poll("a"), "web-a") == []  # nothing yet: it waits
    assert ledger.poll(poll("b", host_id="h2"), "web-b") == []
    [delivery] = ledger.offer(offer())
    assert isinstance(delivery, PollAnswer) and delivery.request_id == "a"
    assert [c["call_id"] for c in delivery.body["calls"]] == ["s1-1"]
    assert ledger.offer(offer()) == []  # offered twice: still delivered once
    assert ledger.poll_expired("b")[0].body == {"calls": [], "cancel": []}
    with pytest.raises(AnswerRefused) as refused:
        ledger.answer("s1-1", None, {"is_error": False})
    assert refused.value.code == "invalid_request"
    [verdict] = ledger.answer("s1-1", None, {"content": "ok"})
    assert verdict.answer == {"content": "ok", "is_error": False, "events": [], "outcome": "ok"}
    with pytest.raises(AnswerRefused) as refused:
        ledger.answer("s1-1", None, {"content": "again"})
    assert refused.value.code == "already_answered"


def test_outcomes_without_an_answer() -> None:
    ledger = Ledger()
    ledger.offer(offer(1))
    [timeout] = ledger.expire("s1-1")
    assert timeout.outcome == "timeout" and "nothing was sent" in timeout.message
    ledger.offer(offer(2))
    ledger.poll(poll(wait=0), "web")
    [unknown] = ledger.expire("s1-2")
    assert unknown.outcome == "unknown"
    with pytest.raises(AnswerRefused) as refused:
        ledger.answer("s1-2", None, {"content": "late"})
    assert refused.value.code == "not_found"


def test_cancel_before_and_after_delivery() -> None:
    ledger = Ledger()
    assert ledger.cancel("s1-9") == []  # overtook its offer: the offer is refused on arrival
    [early] = ledger.offer(offer(9))
    assert (early.outcome, early.reply_to) == ("cancelled", "executor")
    ledger.offer(offer(1))
    [cancelled] = ledger.cancel("s1-1")
    assert cancelled.outcome == "cancelled" and "nothing was sent" in cancelled.message
    ledger.offer(offer(2))
    ledger.poll(poll("take", wait=0), "web")
    ledger.poll(poll("other", host_id="h2"), "web-2")  # another host waits
    ledger.poll(poll("mine"), "web-1")  # the taking host polls again
    sends = ledger.cancel("s1-2")
    assert [(s.request_id, s.body["cancel"]) for s in sends] == [("mine", ["s1-2"])]
    assert ledger.expire("s1-2", after_cancel=True)[0].outcome == "unknown"


def test_a_newer_poll_of_the_same_host_releases_the_older() -> None:
    ledger = Ledger()
    ledger.poll(poll("old"), "web-old")
    [released, own] = ledger.poll(poll("new", wait=0, max_calls=0), "web-new")
    assert (released.request_id, released.body) == ("old", {"calls": [], "cancel": []})
    assert own.request_id == "new"
    assert ledger.offer(offer()) == []  # nobody waits any more: the call stays untaken
    assert not ledger.calls["s1-1"].delivered


def test_a_session_scoped_poll_sees_its_own_session_only() -> None:
    ledger = Ledger()
    ledger.offer(offer(1, session="other"))
    ledger.offer(offer(1, session="mine"))
    [answer] = ledger.poll(poll(scope="mine", wait=0), "web")
    assert [c["session_id"] for c in answer.body["calls"]] == ["mine"]
    ledger.poll(poll("operator", wait=0), "web")  # the operator takes the other session's call
    with pytest.raises(AnswerRefused) as refused:
        ledger.answer("other-1", "mine", {"content": 1})
    assert refused.value.code == "not_found"
