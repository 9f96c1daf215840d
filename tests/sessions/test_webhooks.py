"""Webhook deliveries in the session core (brain/sessions/webhooks.py), the pure retry rule
(brain/actors/executors/webhook_schedule.py) and the signature (brain/net/webhook_signature.py).

End-to-end delivery against a real receiver is tests/e2e/test_webhooks.py."""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import replace

import pytest

from brain.actors.executors.webhook_schedule import Backoff, after_attempt
from brain.journal import empty_projection, fold_all
from brain.journal.events import to_event
from brain.net.webhook_post import AttemptResult
from brain.net.webhook_signature import secret_key, signature
from brain.protocol.messages import (
    DeliverWebhook,
    WebhookRecord,
    WebhookRecordLater,
)
from brain.protocol.targets import Target
from brain.sessions import records
from brain.sessions.state import ActivationFinished, Opened, Step
from tests.sessions.harness import LIMITS, SESSION, Session, sent
from tests.sessions.test_replay import ANSWER, OPS, USER, live, replay_of

WEBHOOKS = replace(LIMITS, webhooks=True)


def finished_turn(session: Session) -> tuple[list[dict], Step]:
    """Run the session's running turn to its end: the records of that last step, and it."""
    live(session, {"op": "model.call", "messages": USER}, ANSWER)
    step = session.feed(ActivationFinished(session.state.turn.sequence,
                                           {"status": "completed", "output": "hello"}, None))
    return list(step.records), step


def test_a_turn_s_end_owes_a_delivery_in_the_same_batch_and_sends_it_after():
    session = Session(WEBHOOKS).running()
    turn = session.state.turn.sequence
    batch, step = finished_turn(session)
    assert [r["kind"] for r in batch] == ["activation_ended", "turn_ended",
                                          "webhook_delivery_pending"]
    terminal, pending = batch[-2], batch[-1]
    assert pending["id"] == f"msg_{SESSION}_{terminal['seq']}"
    assert pending["body"] == {"session_id": SESSION, "sequence": turn, "kind": "turn_ended",
                               "status": "ended"}
    [send] = [s for s in step.sends if s.to == Target.WEBHOOK_EXECUTOR]
    assert send.message == DeliverWebhook(SESSION, pending["id"], pending["body"],
                                          started=pending["seq"])
    assert session.state.projection.webhooks_pending == {
        pending["id"]: {"body": pending["body"], "attempts": 0}}
    assert to_event(pending, 0) is None  # private


def test_no_webhook_configured_owes_nothing():
    session = Session().running()
    batch, step = finished_turn(session)
    assert not [r for r in batch if r["kind"].startswith("webhook")]
    assert not sent(step, DeliverWebhook)


def test_a_cancelled_turn_is_posted_as_cancelled():
    from brain.protocol.messages import CancelTurn
    session = Session(WEBHOOKS).running()
    session.command(CancelTurn())
    step = session.feed(ActivationFinished(session.state.turn.sequence, None,
                                           {"code": "cancelled", "message": "stopped"}))
    pending = step.records[-1]
    assert pending["kind"] == "webhook_delivery_pending"
    assert pending["body"]["status"] == "cancelled"
    assert pending["body"]["kind"] == "turn_failed"


def test_an_interrupted_turn_found_at_open_owes_a_delivery():
    crashed = Session(WEBHOOKS).running()
    session = Session(WEBHOOKS)
    step = session.feed(Opened(fold_all(empty_projection(), crashed.records)))
    pending = step.records[-1]
    assert pending["kind"] == "webhook_delivery_pending"
    assert pending["body"]["status"] == "interrupted"
    assert sent(step, DeliverWebhook)


def test_results_are_journaled_while_pending_and_repeats_change_nothing():
    session = Session(WEBHOOKS).running()
    batch, _ = finished_turn(session)
    ident = batch[-1]["id"]
    step = session.command(WebhookRecord(records.webhook_delivery_attempted(
        ident, 1, 500, "the receiver answered 500", 1000)))
    assert session.kinds(step) == ["webhook_delivery_attempted"]
    assert session.state.projection.webhooks_pending[ident]["attempts"] == 1
    step = session.command(WebhookRecord(records.webhook_delivery_done(ident, 2, 204)))
    assert session.kinds(step) == ["webhook_delivery_done"]
    assert session.state.projection.webhooks_pending == {}
    step = session.command(WebhookRecord(records.webhook_delivery_done(ident, 2, 204)))
    assert step.records == ()  # a delivery already over is not journaled again
    assert not step.replies  # nobody waits for it


def test_a_result_arriving_during_a_turn_goes_back_and_the_turn_replays_unbroken():
    """An earlier turn's delivery result lands while the next turn runs (or waits, suspended):
    it is turned back to the executor, never journaled among the turn's records, so a resumed
    activation's replay answers every call as it was live; once the turn is over it is taken."""
    session = Session(WEBHOOKS).running()
    batch, _ = finished_turn(session)
    ident = batch[-1]["id"]
    attempted = records.webhook_delivery_attempted(ident, 1, None, "refused", 10)
    from brain.protocol.messages import StartTurn
    session.command(StartTurn("again", "send"))
    answers = []
    for i, (op, outcome) in enumerate(OPS):
        if i in (2, 6):
            step = session.command(WebhookRecord(attempted, offers=i))
            assert step.records == ()
            [later] = sent(step, WebhookRecordLater)
            assert later == WebhookRecordLater(SESSION, attempted, i + 1)
        answers.append(live(session, op, outcome))
    replay = replay_of(session)
    for (op, _), answer in zip(OPS, answers, strict=True):
        assert replay.answer(op) == answer
    assert replay.done
    finished_turn(session)
    step = session.command(WebhookRecord(attempted, offers=3))
    assert session.kinds(step) == ["webhook_delivery_attempted"]


def test_backoff_doubles_is_capped_and_gives_up():
    backoff = Backoff(attempts=4, first_ms=1000, max_ms=3000)
    failed = AttemptResult(False, 500, "the receiver answered 500")
    assert [backoff.pause_ms(n) for n in (1, 2, 3, 4)] == [1000, 2000, 3000, 3000]
    record, pause = after_attempt("m", 1, failed, backoff)
    assert record["kind"] == "webhook_delivery_attempted" and pause == 1000
    assert record["status"] == 500 and record["retry_in_ms"] == 1000
    record, pause = after_attempt("m", 4, failed, backoff)
    assert record["kind"] == "webhook_delivery_abandoned" and pause is None
    record, pause = after_attempt("m", 2, AttemptResult(True, 204), backoff)
    assert record == records.webhook_delivery_done("m", 2, 204) and pause is None


def test_the_signature_is_the_standard_webhooks_hmac():
    key = b"k" * 24
    expected = base64.b64encode(hmac.new(key, b"msg_1.1700000000.{}", hashlib.sha256)
                                .digest()).decode()
    assert signature(key, "msg_1", 1700000000, b"{}") == "v1," + expected
    assert secret_key("whsec_" + base64.b64encode(key).decode()) == key


@pytest.mark.parametrize("bad", ["plain-secret-value-long", "whsec_***notbase64***",
                                 "whsec_" + base64.b64encode(b"short").decode()])
def test_a_malformed_secret_is_refused_without_being_quoted(bad):
    with pytest.raises(ValueError) as refused:
        secret_key(bad)
    assert bad not in str(refused.value) and bad[6:] not in str(refused.value)
