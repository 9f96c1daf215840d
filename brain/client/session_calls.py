"""The three requests about one session that both a Session handle and a cancellable send make.

A send under a CancelSignal (brain/client/cancelling.py) reads the session, posts the message
and posts cancel, exactly as the Session handle does for `refresh`, `send` and `interrupt`.
Both take those requests from here, so the cancelling send needs no Session, and the handle's
module imports the cancelling one, never the other way round.
"""

from __future__ import annotations

from typing import Any

from brain.client.api import Api
from brain.client.shapes import CancelAnswer, TurnResult
from brain.client.transport import quote_segment

TurnInput = str | list[dict[str, Any]]


class SessionCalls:
    """Requests on `/v1/sessions/{id}` through the client's shared Api."""

    def __init__(self, api: Api, session_id: str) -> None:
        self.api = api
        self.session_id = session_id
        self.path = f"/v1/sessions/{quote_segment(session_id)}"

    def fetch_state(self) -> dict[str, Any]:
        """The current Session representation (GET; never activates the session)."""
        return self.api.call("GET", self.path).json()

    def post_send(self, turn_input: TurnInput, key: str | None,
                  timeout: float | None) -> TurnResult:
        """POST a message and wait for its TurnResult (`timeout` None: the turn timeout)."""
        wait = self.api.turn_timeout if timeout is None else timeout
        answer = self.api.call("POST", self.path + "/messages", body={"input": turn_input},
                               idempotency_key=key, timeout=wait)
        return TurnResult.from_json(answer.json())

    def post_cancel(self, key: str | None) -> CancelAnswer:
        """POST cancel: stop the work in flight, if any."""
        answer = self.api.call("POST", self.path + "/cancel", idempotency_key=key)
        return CancelAnswer.from_json(answer.json())
