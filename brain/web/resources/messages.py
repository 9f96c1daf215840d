"""POST /v1/sessions/{id}/messages: synchronous send, or async submit with respond-async."""

from __future__ import annotations

import falcon

from brain.protocol.messages import StartTurn
from brain.sessions.asked_limits import ASKABLE, LIMITS_FIELD
from brain.settings import Settings
from brain.tracing import otel
from brain.web.admission import Admission
from brain.web.bodies import MESSAGE_BODY_LIMIT
from brain.web.contract import WRITE_ERRORS, Answer, operation
from brain.web.gateway import ActorGateway
from brain.web.reads import session_dir
from brain.web.schema import Schema, nullable
from brain.web.shapes import CONTENT, SEQUENCE, TURN_ERROR

TURN_REPLY_MARGIN_SECS = 120.0
SUBMIT_TIMEOUT_SECS = 60.0

MESSAGE_BODY = Schema("MessageBody", {
    "type": "object",
    "additionalProperties": False,
    "required": ["input"],
    "properties": {
        "input": CONTENT,
        LIMITS_FIELD: nullable({
            "type": "object", "additionalProperties": False,
            "properties": {name: {"type": "integer", "minimum": 1, "nullable": True}
                           for name in ASKABLE},
            "description": "Lower limits for this turn than the session's (never higher: "
                           "400); recorded on its turn_started."}),
    },
}, "message body")

RECEIPT = Schema("Receipt", {
    "type": "object",
    "required": ["session_id", "sequence"],
    "properties": {"session_id": {"type": "string"}, "sequence": SEQUENCE},
}, "receipt")

TURN_RESULT = Schema("TurnResult", {
    "type": "object",
    "required": ["session_id", "sequence", "status"],
    "properties": {
        "session_id": {"type": "string"},
        "sequence": SEQUENCE,
        "status": {"type": "string", "enum": ["ended", "failed"]},
        "output": {"description": "The Agentloop's output, verbatim (any JSON)."},
        "error": nullable(TURN_ERROR),
    },
}, "turn result")


def respond_async(req: falcon.Request) -> bool:
    prefer = req.get_header("Prefer") or ""
    return any(p.strip().lower() == "respond-async" for p in prefer.split(","))


def message_scope(req: falcon.Request) -> str:
    """Submit and send are separate idempotency scopes: never each other's retry."""
    return "submit" if respond_async(req) else "send"


class MessagesResource:
    admits_work = True
    idempotent = {"POST": message_scope}

    def __init__(self, settings: Settings, gateway: ActorGateway) -> None:
        self.settings = settings
        self.gateway = gateway
        self.admission = Admission(settings, gateway)

    @operation("sendMessage", "Run a turn (sync), or submit it (Prefer: respond-async)", {
        200: Answer("The finished turn", TURN_RESULT),
        202: Answer("The turn is durably started", RECEIPT, ("Location", "Preference-Applied")),
    }, errors=(*WRITE_ERRORS, 503), headers=("Prefer",), body=MESSAGE_BODY, body_required=True,
       body_limit=MESSAGE_BODY_LIMIT)
    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        path = session_dir(self.settings, session_id)
        turn_input = req.context.body["input"]
        asked = req.context.body.get(LIMITS_FIELD) or None  # checked by the session core
        parent = otel.traceparent(getattr(req.context, "otel_span", None))  # BRAIN_OTEL
        if respond_async(req):
            # Admitted here when no actor holds the session; else its actor decides.
            # A turn asking for its own limits goes to the actor, which checks them against the
            # session's.
            receipt = None if asked else self.admission.submit(path, turn_input, parent)
            if receipt is None:
                receipt = self.gateway.request(
                    session_id, StartTurn(turn_input, "submit", parent, asked),
                    SUBMIT_TIMEOUT_SECS)
            resp.status = falcon.HTTP_202
            resp.set_header("Preference-Applied", "respond-async")
            resp.set_header("Location", f"/v1/sessions/{session_id}")
            resp.media = receipt
            return
        max_secs = self.settings.max_turn_secs
        timeout = max_secs + TURN_REPLY_MARGIN_SECS if max_secs else None
        resp.media = self.gateway.request(session_id,
                                          StartTurn(turn_input, "send", parent, asked), timeout)
