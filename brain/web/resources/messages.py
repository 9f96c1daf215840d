"""POST /v1/sessions/{id}/messages: synchronous send, or async submit with respond-async."""

from __future__ import annotations

import falcon

from brain import errors
from brain.actors.messages import StartTurn
from brain.settings import Settings
from brain.web.bodies import MESSAGE_BODY_LIMIT, read_json_object
from brain.web.gateway import ActorGateway
from brain.web.idempotent import IdempotencyGate
from brain.web.reads import session_dir

TURN_REPLY_MARGIN_SECS = 120.0
SUBMIT_TIMEOUT_SECS = 60.0


def respond_async(req: falcon.Request) -> bool:
    prefer = req.get_header("Prefer") or ""
    return any(p.strip().lower() == "respond-async" for p in prefer.split(","))


def validate_input(value: object) -> object:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and isinstance(b.get("type"), str)
                                       for b in value):
        return value
    raise errors.InvalidRequest("input: expected a string or a list of content blocks")


class MessagesResource:
    admits_work = True

    def __init__(self, settings: Settings, gateway: ActorGateway, gate: IdempotencyGate) -> None:
        self.settings = settings
        self.gateway = gateway
        self.gate = gate

    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        # Submit and send are separate idempotency scopes: never each other's retry.
        operation = "submit" if respond_async(req) else "send"
        self.gate.run(req, resp, operation, session_id, MESSAGE_BODY_LIMIT,
                      lambda: self._post(req, resp, session_id))

    def _post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        session_dir(self.settings, session_id)
        body = read_json_object(req, MESSAGE_BODY_LIMIT)
        unknown = set(body) - {"input"}
        if unknown:
            raise errors.InvalidRequest(f"unknown field: {sorted(unknown)[0]}")
        if "input" not in body:
            raise errors.InvalidRequest("input: required")
        turn_input = validate_input(body["input"])
        if respond_async(req):
            receipt = self.gateway.request(session_id, StartTurn(turn_input, "submit"),
                                           SUBMIT_TIMEOUT_SECS)
            resp.status = falcon.HTTP_202
            resp.set_header("Preference-Applied", "respond-async")
            resp.set_header("Location", f"/v1/sessions/{session_id}")
            resp.media = receipt
            return
        max_secs = self.settings.max_turn_secs
        timeout = max_secs + TURN_REPLY_MARGIN_SECS if max_secs else None
        resp.media = self.gateway.request(session_id, StartTurn(turn_input, "send"), timeout)
