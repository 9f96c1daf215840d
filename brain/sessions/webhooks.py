"""The session core's side of webhooks: a turn that is over owes one delivery, journaled first.

When a turn ends, fails or is interrupted, and the server names a webhook (BRAIN_WEBHOOK_URL),
the step that commits the turn's terminal record commits `webhook_delivery_pending` in the same
batch, and sends `DeliverWebhook` to the webhook executor, which the actor does only once that
batch is durable. So a delivery is never sent that the journal does not hold, and one the
journal holds is never lost: a restart finds it pending (brain/sessions/scan.py, from the
statuses brain/journal/statuses.py reads). What each attempt came to reaches the session as a
`WebhookRecord` command and is journaled here. None of this changes the turn: its result, its
Events and its answer are the same with or without a webhook (docs/operations.md, "Webhooks").
"""

from __future__ import annotations

from typing import Any

from brain.protocol.messages import (
    DeliverWebhook,
    WebhookRecord,
    WebhookRecordLater,
)
from brain.protocol.records import (
    TURN_ENDS,
    TURN_FAILED,
    WEBHOOK_DELIVERY_PENDING,
    WEBHOOK_RECORDS,
)
from brain.protocol.targets import Target
from brain.sessions import records
from brain.sessions.tx import Tx

TURN_TERMINALS = TURN_ENDS


def delivery_id(session_id: str, terminal_seq: int) -> str:
    """The delivery's `webhook-id`: derived from where its turn ended, so every attempt, and
    every attempt after a restart, carries the same one and a receiver can deduplicate."""
    return f"msg_{session_id}_{terminal_seq}"


def body_of(session_id: str, terminal: dict[str, Any]) -> dict[str, Any]:
    """`{session_id, sequence, kind, status}`: `sequence` is the turn's (its `turn_started`, as
    in TurnResult), `kind` the terminal record's, `status` what became of the turn: `ended`,
    `cancelled`, `interrupted` (a restart found it in flight) or `failed`."""
    status = "ended"
    if terminal["kind"] == TURN_FAILED:
        code = (terminal.get("error") or {}).get("code")
        status = code if code in ("cancelled", "interrupted") else "failed"
    return {"session_id": session_id, "sequence": terminal["started"],
            "kind": terminal["kind"], "status": status}


def owe_deliveries(tx: Tx, committed: list[dict[str, Any]]) -> None:
    """For each turn terminal among records just added to this step, owe its delivery: the
    pending record joins the same batch, and the send leaves after it is durable."""
    if not tx.state.limits.webhooks:
        return
    session_id = tx.state.session_id
    for terminal in committed:
        if terminal["kind"] in TURN_TERMINALS:
            body = body_of(session_id, terminal)
            ident = delivery_id(session_id, terminal["seq"])
            [pending] = tx.commit(records.webhook_delivery_pending(ident, body))
            tx.send(Target.WEBHOOK_EXECUTOR,
                    DeliverWebhook(session_id, ident, body, started=pending["seq"]))


def record_result(tx: Tx, command: WebhookRecord) -> None:
    """Journal what an attempt came to, while the delivery is pending: a repeat of a result
    already journaled (an attempt resumed after a restart) changes nothing. While a turn is
    open it goes back to the executor instead, to be offered again: a turn's records are its
    own, in one unbroken run that a resumed activation replays and compares call by call."""
    record = command.record
    projection = tx.state.projection
    if record.get("kind") not in WEBHOOK_RECORDS - {WEBHOOK_DELIVERY_PENDING} \
            or record.get("id") not in projection.webhooks_pending:
        return
    if tx.state.turn is not None or projection.open_turn is not None:
        tx.send(Target.WEBHOOK_EXECUTOR, WebhookRecordLater(tx.state.session_id, record,
                                                                   command.offers + 1))
        return
    tx.commit(dict(record))
