"""POST cancel, POST end, DELETE, and POST tokens for one session."""

from __future__ import annotations

import falcon

from brain.actors.messages import CancelTurn, DeleteSession, EndSession
from brain.settings import Settings
from brain.web.bodies import SMALL_BODY_LIMIT, read_json_object
from brain.web.credentials import issue_session_token
from brain.web.gateway import ActorGateway
from brain.web.idempotent import IdempotencyGate
from brain.web.reads import session_dir, session_resource

END_REPLY_MARGIN_SECS = 120.0
CANCEL_TIMEOUT_SECS = 60.0
DELETE_TIMEOUT_SECS = 120.0


class CancelResource:
    def __init__(self, settings: Settings, gateway: ActorGateway, gate: IdempotencyGate) -> None:
        self.settings = settings
        self.gateway = gateway
        self.gate = gate

    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        self.gate.run(req, resp, "cancel", session_id, SMALL_BODY_LIMIT,
                      lambda: self._post(req, resp, session_id))

    def _post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        session_dir(self.settings, session_id)
        read_json_object(req, SMALL_BODY_LIMIT, optional=True)
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
    def __init__(self, settings: Settings, gateway: ActorGateway, gate: IdempotencyGate) -> None:
        self.settings = settings
        self.gateway = gateway
        self.gate = gate

    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        self.gate.run(req, resp, "end", session_id, SMALL_BODY_LIMIT,
                      lambda: self._post(req, resp, session_id))

    def _post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        session_dir(self.settings, session_id)
        read_json_object(req, SMALL_BODY_LIMIT, optional=True)
        max_secs = self.settings.max_turn_secs
        timeout = max_secs + END_REPLY_MARGIN_SECS if max_secs else None
        resp.media = self.gateway.request(session_id, EndSession(), timeout)


class TokensResource:
    operator_only = True

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        path = session_dir(self.settings, session_id)
        read_json_object(req, SMALL_BODY_LIMIT, optional=True)
        resp.status = falcon.HTTP_201
        resp.media = {"token": issue_session_token(path)}


def delete_session(settings: Settings, gateway: ActorGateway, session_id: str) -> None:
    session_dir(settings, session_id)
    gateway.request(session_id, DeleteSession(), DELETE_TIMEOUT_SECS)
