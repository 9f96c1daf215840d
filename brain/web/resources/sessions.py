"""POST/GET /v1/sessions and GET/DELETE /v1/sessions/{id}."""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import falcon

from brain import errors
from brain.actors.convention import member_session_id
from brain.config import CREATE_FIELDS, MAX_IDLE_TTL_MS, BrainConfig, seed_transcript
from brain.protocol.messages import CreateSession
from brain.session_limits import limits_from
from brain.sessions.asked_limits import ASKABLE, LIMITS_FIELD, session_limits
from brain.settings import Settings
from brain.tracing import otel
from brain.web.bodies import CREATE_BODY_LIMIT
from brain.web.contract import (
    READ_ERRORS,
    SESSION_STATUSES,
    WRITE_ERRORS,
    Answer,
    operation,
)
from brain.web.gateway import ActorGateway
from brain.web.mcp_create import add_mcp_tools, forget_mcp_session, names_mcp_servers
from brain.web.member_registries import MemberNotReached
from brain.web.members import Convention
from brain.web.reads import session_resource
from brain.web.resources.lifecycle import delete_session
from brain.web.schema import Schema, optional
from brain.web.shapes import MESSAGE, SESSION, SESSION_ID_STRING

log = logging.getLogger(__name__)

CREATE_TIMEOUT_SECS = 60.0
MAX_LIST = 100

JSON_TYPE_OF = {str: "string", list: "array", int: "integer", dict: "object"}
CREATE_FIELD_DETAILS: dict[str, dict[str, Any]] = {
    "agentloop": {"x-configured": "agentloops"},
    "model": {"x-configured": "models"},
    "tools": {"items": {"type": "string", "x-configured": "tools"}, "uniqueItems": True},
    "environments": {"items": {"type": "string", "x-configured": "environments"},
                     "uniqueItems": True},
    "transcript": {"items": MESSAGE,
                   "description": "Messages to seed the session's opening conversation."},
    "mcp_servers": {"items": {"type": "string", "x-configured": "mcp_servers"},
                    "uniqueItems": True,
                    "description": "MCP servers whose tools (server.tool) the session offers; "
                    "each one's tools/list is fetched and recorded at create."},
    "mcp_credentials": {"additionalProperties": {"type": "object"},
                        "description": "The session's own credentials, by server: "
                        "{bearer_token, headers} for a url server, {env} for a stdio one. Held "
                        "in memory only, never recorded or logged."},
    "idle_ttl_ms": {"minimum": 0, "maximum": MAX_IDLE_TTL_MS,
                    "description": "Keep the actor this long after work; 0 = forever; absent or "
                    "null = the server-wide BRAIN_SESSION_IDLE_TTL_MS."},
    LIMITS_FIELD: {"additionalProperties": False,
                   "properties": {name: {"type": "integer", "minimum": 1, "nullable": True}
                                  for name in ASKABLE},
                   "description": "Lower limits for this session's turns than the server's "
                   "(never higher: 400); recorded in config.limits."},
}
if not set(CREATE_FIELD_DETAILS) <= set(CREATE_FIELDS):
    raise RuntimeError("create-body details for fields brain.config does not accept")

# The fields and their types are brain.config's; the web adds what a client should know.
CREATE_BODY = Schema("CreateBody", {
    "type": "object",
    "additionalProperties": False,
    "description": "Only names defined in the server configuration; never secrets, except "
    "in `mcp_credentials`, which is held in memory and never recorded. "
    "Every field is optional, and null means the same as absent.",
    "properties": {
        name: optional({"type": JSON_TYPE_OF[kind], **CREATE_FIELD_DETAILS.get(name, {})})
        for name, kind in CREATE_FIELDS.items()
    },
}, "create body")

SESSION_LIST = Schema("SessionList", {
    "type": "object",
    "required": ["sessions", "next_cursor"],
    "properties": {
        "sessions": {"type": "array", "items": SESSION, "maxItems": MAX_LIST},
        "next_cursor": {**SESSION_ID_STRING, "nullable": True},
    },
}, "session list")


def new_session_id() -> str:
    """Time-ordered ids (48-bit milliseconds + 80 random bits) list newest-first by name."""
    return f"{int(time.time() * 1000):012x}{os.urandom(10).hex()}"


class SessionsResource:
    operator_only = True
    admits_work = True
    idempotent = {"POST": "create"}

    def __init__(self, settings: Settings, config: BrainConfig, gateway: ActorGateway,
                 convention: Convention | None = None) -> None:
        self.settings = settings
        self.config = config
        self.gateway = gateway
        self.convention = convention  # a member of several hosts spreads new sessions

    @operation("createSession", "Create a session from configured names",
               {201: Answer("The new session", SESSION, ("Location",))},
               errors=(*WRITE_ERRORS, 503), body=CREATE_BODY, body_limit=CREATE_BODY_LIMIT)
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = req.context.body
        resolved = self.config.resolve_create(body)  # configured names, the seed's messages
        resolved[LIMITS_FIELD] = session_limits(body.get(LIMITS_FIELD), limits_from(self.settings))
        if names_mcp_servers(body):
            # The local Tool executor lists the servers and holds the credentials, so the
            # session stays on this member.
            self._create_here(req, resp, body, resolved)
            return
        member = self.convention.place() if self.convention is not None else None
        parent = otel.traceparent(getattr(req.context, "otel_span", None))  # BRAIN_OTEL
        create = CreateSession(resolved, seed_transcript(body), traceparent=parent)
        try:
            session_id = member_session_id(new_session_id(),
                                           member.name if member else self.settings.member)
            view = self.gateway.request(session_id, create, CREATE_TIMEOUT_SECS, member)
        except MemberNotReached as exc:
            # Nothing arrived there (a partition, or it died since it was chosen): this
            # member holds the session instead, rather than the client waiting or retrying.
            log.warning("create placed on %s goes to this member: %s", member and member.name,
                        exc)
            session_id = member_session_id(new_session_id(), self.settings.member)
            view = self.gateway.request(session_id, create, CREATE_TIMEOUT_SECS)
        self._created(resp, session_id, view)

    def _create_here(self, req: falcon.Request, resp: falcon.Response, body: dict[str, Any],
                     resolved: dict[str, Any]) -> None:
        """A create naming MCP servers: listed first (brain/web/mcp_create.py), made here."""
        session_id = member_session_id(new_session_id(), self.settings.member)
        add_mcp_tools(self.config, body, resolved, session_id, self.gateway)
        parent = otel.traceparent(getattr(req.context, "otel_span", None))  # BRAIN_OTEL
        create = CreateSession(resolved, seed_transcript(body), traceparent=parent)
        try:
            view = self.gateway.request(session_id, create, CREATE_TIMEOUT_SECS)
        except BaseException:
            forget_mcp_session(self.gateway, session_id)
            raise
        self._created(resp, session_id, view)

    @staticmethod
    def _created(resp: falcon.Response, session_id: str, view: Any) -> None:
        resp.status = falcon.HTTP_201
        resp.media = view
        resp.set_header("Location", f"/v1/sessions/{session_id}")

    @operation("listSessions", "List sessions, newest first",
               {200: Answer("A page of sessions", SESSION_LIST)}, errors=(400, 401, 403, 500),
               query={
                   "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIST,
                             "default": MAX_LIST},
                   "cursor": {**SESSION_ID_STRING,
                              "description": "`next_cursor` of the previous page."},
                   "status": {"type": "string", "enum": list(SESSION_STATUSES)},
               })
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = req.context.query
        resp.media = list_sessions(self.settings, query["limit"], query["cursor"], query["status"])


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
    idempotent = {"DELETE": "delete"}

    def __init__(self, settings: Settings, gateway: ActorGateway) -> None:
        self.settings = settings
        self.gateway = gateway

    @operation("getSession", "Read a session (never activates it)",
               {200: Answer("The session", SESSION)}, errors=READ_ERRORS)
    def on_get(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        resp.media = session_resource(self.settings, session_id)

    @operation("deleteSession", "Delete an ended, failed or damaged session",
               {204: Answer("Deleted")}, errors=(*WRITE_ERRORS, 502))
    def on_delete(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        delete_session(self.settings, self.gateway, session_id)
        resp.status = falcon.HTTP_204
