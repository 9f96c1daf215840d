"""The WebhookExecutor actor: delivers the webhooks of turns that are over, at least once.

One per actor system, created at boot, like the effect executors. It gets a `DeliverWebhook` from a
session actor once that turn's `webhook_delivery_pending` is durable, or from boot for each
delivery a restart found pending in the journals (brain/journal/statuses.py reads them,
brain/sessions/scan.py gathers the deliveries). Each attempt runs in a thread of its own (a slow
receiver holds no session and no turn); what it came to goes to the registry as a `WebhookRecord`
command, which the session's actor journals (opening the session if no actor holds it), and the
next attempt waits on this actor's own timer. So the executor owns the retries: a session actor is
released between attempts as after any turn, and a restart rebuilds the executor's table from the
journals. A delivery whose session was deleted is dropped before its next attempt. The secret is
read from the settings here and used only to sign; it reaches no record, message or log.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from brain.actors.bridge import BridgedActor
from brain.actors.executors.webhook_schedule import Backoff, after_attempt
from brain.actors.worker_threads import WorkerThreads
from brain.net.webhook_post import AttemptResult, encode_body, post_webhook
from brain.net.webhook_signature import secret_key
from brain.protocol.messages import (
    REGISTRY_GLOBAL_NAME,
    DeliverWebhook,
    ResumeWebhooks,
    Services,
    ToSession,
    WebhookRecord,
    WebhookRecordLater,
)
from brain.sessions import records
from brain.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryDue:
    """The executor's own timer: the next attempt of `delivery_id` is due."""

    delivery_id: str


@dataclass(frozen=True)
class OfferAgain:
    """The executor's own timer: offer a record its session turned back (a turn was open)."""

    session_id: str
    record: dict[str, Any]
    offers: int


OFFER_AGAIN_SECS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
"""Pauses before a turned-back record is offered again (the last repeats while turns last)."""


@dataclass
class Delivery:
    """One delivery this executor owes: its message and the attempts made so far."""

    message: DeliverWebhook
    attempts: int
    in_flight: bool = False


class WebhookExecutor(BridgedActor):
    trace_name = "webhook_executor"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = Settings.from_env()
        self.sessions_path = settings.sessions_path
        self.url = settings.webhook_url
        self.key = secret_key(settings.webhook_secret) if settings.webhook_secret else None
        self.timeout_s = settings.webhook_timeout_ms / 1000.0
        self.backoff = Backoff(settings.webhook_attempts, settings.webhook_retry_ms,
                               settings.webhook_retry_max_ms)
        self.deliveries: dict[str, Delivery] = {}
        self.threads = WorkerThreads("webhook")
        self.cancel = threading.Event()  # never set: an attempt ends by its own timeout
        self.registry: Any = None

    def receiveMsg_Services(self, msg: Services, sender: Any) -> None:
        self.registry = msg.addresses.get(REGISTRY_GLOBAL_NAME)

    def receiveMsg_DeliverWebhook(self, msg: DeliverWebhook, sender: Any) -> None:
        self._take(msg)

    def receiveMsg_ResumeWebhooks(self, msg: ResumeWebhooks, sender: Any) -> None:
        for each in msg.deliveries:
            self._take(each)

    def _take(self, msg: DeliverWebhook) -> None:
        """Owe `msg` unless it is owed already (a delivery resumed at boot and handed again)."""
        if msg.delivery_id in self.deliveries:
            return
        delivery = Delivery(msg, msg.attempts)
        self.deliveries[msg.delivery_id] = delivery
        if self.url is None or self.key is None:
            self._journal(delivery, records.webhook_delivery_abandoned(
                msg.delivery_id, msg.attempts, "no webhook is configured (BRAIN_WEBHOOK_URL)"))
            self.deliveries.pop(msg.delivery_id, None)
            return
        self._attempt(delivery)

    def receiveMsg_WebhookRecordLater(self, msg: WebhookRecordLater, sender: Any) -> None:
        pause = OFFER_AGAIN_SECS[min(msg.offers, len(OFFER_AGAIN_SECS)) - 1]
        self.wakeupAfter(pause, OfferAgain(msg.session_id, msg.record, msg.offers))

    def receiveMsg_WakeupMessage(self, msg: Any, sender: Any) -> None:
        if isinstance(msg.payload, OfferAgain):
            self._offer_again(msg.payload)
        elif isinstance(msg.payload, RetryDue):
            delivery = self.deliveries.get(msg.payload.delivery_id)
            if delivery is not None and not delivery.in_flight:
                self._attempt(delivery)

    def _attempt(self, delivery: Delivery) -> None:
        message = delivery.message
        if not self._session_exists(message.session_id):  # deleted: nothing more is owed
            self.deliveries.pop(message.delivery_id, None)
            return
        delivery.in_flight = True
        url, key, timeout_s, cancel = self.url, self.key, self.timeout_s, self.cancel
        body = encode_body(message.body)

        def work() -> None:
            try:
                result = post_webhook(url, key, message.delivery_id, body, timeout_s, cancel)
            except Exception as exc:  # a bug here still counts as a failed attempt
                log.exception("webhook %s: the attempt failed inside Brain", message.delivery_id)
                result = AttemptResult(False, None, f"internal error ({type(exc).__name__})")
            self.bridge.post((message.delivery_id, result))

        self.threads.submit(work, name=f"webhook-{message.delivery_id}")

    def receiveMsg_WatchMessage(self, msg: Any, sender: Any) -> None:
        for delivery_id, result in self.bridge.drain():
            delivery = self.deliveries.get(delivery_id)
            if delivery is None:
                continue
            delivery.in_flight = False
            delivery.attempts += 1
            record, pause_ms = after_attempt(delivery_id, delivery.attempts, result,
                                             self.backoff)
            if not self._session_exists(delivery.message.session_id):
                self.deliveries.pop(delivery_id, None)
                continue
            self._journal(delivery, record)
            if pause_ms is None:
                self.deliveries.pop(delivery_id, None)
            else:
                self.wakeupAfter(pause_ms / 1000.0, RetryDue(delivery_id))

    def _offer_again(self, offer: OfferAgain) -> None:
        """Send a turned-back record to its session again; should its turn still be open, it
        comes back as a new `WebhookRecordLater`, and waits a little longer each time."""
        if self.registry is None or not self._session_exists(offer.session_id):
            return
        self.send(self.registry, ToSession(f"webhook-{offer.record['id']}-again",
                                           offer.session_id,
                                           WebhookRecord(offer.record, offer.offers)))

    def _journal(self, delivery: Delivery, record: dict[str, Any]) -> None:
        """The session's actor journals it; the registry opens the session if no actor holds
        it. Sent only once the registry's address is known (boot hands it over first)."""
        if self.registry is None:
            log.error("webhook %s: no registry address; its %s is not journaled",
                      delivery.message.delivery_id, record["kind"])
            return
        session_id = delivery.message.session_id
        self.send(self.registry, ToSession(f"webhook-{record['id']}-{delivery.attempts}",
                                           session_id, WebhookRecord(record)))

    def _session_exists(self, session_id: str) -> bool:
        return (self.sessions_path / session_id / "journal").is_dir()
