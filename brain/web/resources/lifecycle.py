"""POST cancel, POST end, DELETE, and POST tokens for one session."""

from __future__ import annotations

import falcon

from brain.protocol.messages import CancelTurn, DeleteSession, EndSession
from brain.settings import Settings
from brain.web.contract import IGNORED_BODY, WRITE_ERRORS, Answer, operation
from brain.web.credentials import issue_session_token
from brain.web.gateway import ActorGateway
from brain.web.reads import session_dir, session_resource
from brain.web.schema import Schema, nullable
from brain.web.shapes import SEQUENCE, SESSION

END_REPLY_MARGIN_SECS = 120.0
CANCEL_TIMEOUT_SECS = 60.0
DELETE_TIMEOUT_SECS = 120.0

CANCEL_ANSWER = Schema("CancelAnswer", {
    "type": "object",
    "required": ["session_id", "sequence"],
    "properties": {
        "session_id": {"type": "string"},
        "sequence": nullable({
            **SEQUENCE, "description": "The cancel_requested record; null when nothing ran."}),
    },
}, "cancel answer")

TOKEN = Schema("Token", {
    "type": "object",
    "required": ["token"],
    "properties": {"token": {"type": "string", "minLength": 1}},
}, "token")


class CancelResource:
    idempotent = {"POST": "cancel"}

    def __init__(self, settings: Settings, gateway: ActorGateway) -> None:
        self.settings = settings
        self.gateway = gateway

    @operation("cancelTurn", "Request cancellation of the running turn", {
        200: Answer("Nothing was running (sequence null)", CANCEL_ANSWER),
        202: Answer("Cancellation recorded", CANCEL_ANSWER),
    }, errors=WRITE_ERRORS, body=IGNORED_BODY)
    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        status = session_resource(self.settings, session_id)["status"]
        if status != "running":
            # Nothing in flight: answering needs no actor. (After a crash a "running" session
            # goes to its actor, whose open records the interrupted turn.)
            resp.media = {"session_id": session_id, "sequence": None}
            return
        answer = self.gateway.request(session_id, CancelTurn(), CANCEL_TIMEOUT_SECS)
        resp.status = falcon.HTTP_202 if answer.get("sequence") is not None else falcon.HTTP_200
        resp.media = answer


class EndResource:
    idempotent = {"POST": "end"}

    def __init__(self, settings: Settings, gateway: ActorGateway) -> None:
        self.settings = settings
        self.gateway = gateway

    @operation("endSession", "End the session (waits for active work)",
               {200: Answer("The ended session", SESSION)}, errors=WRITE_ERRORS, body=IGNORED_BODY)
    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        session_dir(self.settings, session_id)
        max_secs = self.settings.max_turn_secs
        timeout = max_secs + END_REPLY_MARGIN_SECS if max_secs else None
        resp.media = self.gateway.request(session_id, EndSession(), timeout)


class TokensResource:
    operator_only = True

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @operation("issueToken", "Issue a bearer token good for this session alone",
               {201: Answer("The new token (shown once)", TOKEN)},
               errors=(400, 401, 403, 404, 413, 415, 500), body=IGNORED_BODY)
    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        path = session_dir(self.settings, session_id)
        resp.status = falcon.HTTP_201
        resp.media = {"token": issue_session_token(path)}


def delete_session(settings: Settings, gateway: ActorGateway, session_id: str) -> None:
    session_dir(settings, session_id)
    gateway.request(session_id, DeleteSession(), DELETE_TIMEOUT_SECS)
