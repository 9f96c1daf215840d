"""Which sessions have work in flight or webhooks owed, decided from their status projections
(read by brain/journal/statuses.py; no actor is asked)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from brain.journal.projection import Projection
from brain.protocol.messages import DeliverWebhook

IN_FLIGHT = ("creating", "running", "ending")

Status = tuple[str, Projection, object | None]
"""`(session_id, status projection, refusal or None)`, as each session's journal was read."""


@dataclass(frozen=True)
class StartUpScan:
    """What a start finds: sessions to recover, and webhook deliveries to resume (each with
    the attempts its journal records, under its stable id)."""

    in_flight: list[str] = field(default_factory=list)
    webhooks: tuple[DeliverWebhook, ...] = ()


def start_up_scan(statuses: Iterable[Status]) -> StartUpScan:
    """The sessions to recover and the deliveries to resume, from every session's status."""
    in_flight: list[str] = []
    webhooks: list[DeliverWebhook] = []
    for session_id, projection, damage in statuses:
        if damage is not None:  # it takes no write: neither recovery nor delivery records
            continue
        if projection.status in IN_FLIGHT:
            in_flight.append(session_id)
        for ident, pending in sorted(projection.webhooks_pending.items()):
            webhooks.append(DeliverWebhook(session_id, ident, pending["body"],
                                           pending["attempts"]))
    return StartUpScan(in_flight, tuple(webhooks))


def sessions_in_flight(statuses: Iterable[Status]) -> list[str]:
    """Sessions whose projection says creation, a turn or an ending has not finished."""
    return start_up_scan(statuses).in_flight
