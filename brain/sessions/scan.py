"""Which sessions have work in flight or webhooks owed, read from their journals (no actor is
asked)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from brain.protocol.messages import DeliverWebhook

IN_FLIGHT = ("creating", "running", "ending")


@dataclass(frozen=True)
class StartUpScan:
    """What a start finds: sessions to recover, and webhook deliveries to resume (each with
    the attempts its journal records, under its stable id)."""

    in_flight: list[str] = field(default_factory=list)
    webhooks: tuple[DeliverWebhook, ...] = ()


def start_up_scan(sessions_root: Path) -> StartUpScan:
    """One status read of every session (no transcript decoded)."""
    from brain.journal import JournalError, SessionReader

    in_flight: list[str] = []
    webhooks: list[DeliverWebhook] = []
    if not sessions_root.is_dir():
        return StartUpScan()
    for session_dir in sorted(sessions_root.iterdir()):
        try:
            projection, damage = SessionReader(session_dir).status_projection()
        except (JournalError, OSError, KeyError):
            continue
        if damage is not None:  # it takes no write: neither recovery nor delivery records
            continue
        if projection.status in IN_FLIGHT:
            in_flight.append(session_dir.name)
        for ident, pending in sorted(projection.webhooks_pending.items()):
            webhooks.append(DeliverWebhook(session_dir.name, ident, pending["body"],
                                           pending["attempts"]))
    return StartUpScan(in_flight, tuple(webhooks))


def sessions_in_flight(sessions_root: Path) -> list[str]:
    """Sessions whose projection says creation, a turn or an ending has not finished."""
    return start_up_scan(sessions_root).in_flight
