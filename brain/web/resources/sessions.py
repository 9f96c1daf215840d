"""POST/GET /v1/sessions and GET/DELETE /v1/sessions/{id}."""

from __future__ import annotations

import os
import time

import falcon

from brain import errors
from brain.actors.messages import CreateSession
from brain.config import BrainConfig, seed_transcript
from brain.settings import Settings
from brain.web.bodies import CREATE_BODY_LIMIT, SMALL_BODY_LIMIT, read_json_object
from brain.web.gateway import ActorGateway
from brain.web.idempotent import IdempotencyGate
from brain.web.reads import SESSION_ID, session_resource
from brain.web.resources.history import int_param
from brain.web.resources.lifecycle import delete_session

CREATE_TIMEOUT_SECS = 60.0


def new_session_id() -> str:
    """Time-ordered ids (48-bit milliseconds + 80 random bits) list newest-first by name."""
    return f"{int(time.time() * 1000):012x}{os.urandom(10).hex()}"


class SessionsResource:
    operator_only = True
    admits_work = True

    def __init__(self, settings: Settings, config: BrainConfig, gateway: ActorGateway,
                 gate: IdempotencyGate) -> None:
        self.settings = settings
        self.config = config
        self.gateway = gateway
        self.gate = gate

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.gate.run(req, resp, "create", None, CREATE_BODY_LIMIT,
                      lambda: self._create(req, resp))

    def _create(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json_object(req, CREATE_BODY_LIMIT, optional=True)
        resolved = self.config.resolve_create(body)  # validates the seed transcript too
        transcript = seed_transcript(body)
        session_id = new_session_id()
        view = self.gateway.request(session_id, CreateSession(resolved, transcript),
                                    CREATE_TIMEOUT_SECS)
        resp.status = falcon.HTTP_201
        resp.media = view
        resp.set_header("Location", f"/v1/sessions/{session_id}")


    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        limit = int_param(req, "limit", MAX_LIST, 1, MAX_LIST)
        cursor = req.get_param("cursor")
        if cursor is not None and not SESSION_ID.match(cursor):
            raise errors.InvalidRequest("cursor: not a cursor this server issued")
        wanted = req.get_param("status")
        if wanted is not None and wanted not in STATUSES:
            raise errors.InvalidRequest(f"status: one of {', '.join(STATUSES)}")
        resp.media = list_sessions(self.settings, limit, cursor, wanted)


MAX_LIST = 100
STATUSES = ("creating", "idle", "running", "ending", "ended", "failed", "damaged")


def list_sessions(settings: Settings, limit: int, cursor: str | None,
                  wanted: str | None) -> dict:
    """Newest first: ids are time-ordered, so the directory listing is the index."""
    root = settings.sessions_path
    names = sorted((p.name for p in root.iterdir()), reverse=True) if root.is_dir() else []
    sessions = []
    for name in names:
        if cursor is not None and name >= cursor:
            continue
        try:
            view = session_resource(settings, name)
        except errors.NotFound:
            continue  # being created or deleted right now
        if wanted is not None and view["status"] != wanted:
            continue
        sessions.append(view)
        if len(sessions) == limit:
            break
    more = len(sessions) == limit and sessions[-1]["id"] != (names[-1] if names else None)
    return {"sessions": sessions, "next_cursor": sessions[-1]["id"] if more else None}


class SessionResource:
    def __init__(self, settings: Settings, gateway: ActorGateway, gate: IdempotencyGate) -> None:
        self.settings = settings
        self.gateway = gateway
        self.gate = gate

    def on_get(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        resp.media = session_resource(self.settings, session_id)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        def delete() -> None:
            delete_session(self.settings, self.gateway, session_id)
            resp.status = falcon.HTTP_204

        self.gate.run(req, resp, "delete", session_id, SMALL_BODY_LIMIT, delete)
