"""Request ids and bearer authentication, applied to every route but the probes and console."""

from __future__ import annotations

import hmac
import uuid
from pathlib import Path
from typing import Any

import falcon

from brain import errors, request_context
from brain.drain import is_draining
from brain.web.credentials import session_of_token

PUBLIC_PATHS = frozenset({"/healthz", "/readyz"})
CONSOLE_PATH = "/console"  # the console's page and files: public, the page asks for the token


def is_public(path: str) -> bool:
    """Whether a path (or a route template) answers without a token."""
    return path in PUBLIC_PATHS or path == CONSOLE_PATH or path.startswith(CONSOLE_PATH + "/")


def new_request_id() -> str:
    """A request's id, `req_` and 32 hex digits, also for requests refused below the app."""
    return "req_" + uuid.uuid4().hex


class RequestIdMiddleware:
    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.request_id = new_request_id()
        resp.set_header("X-Request-Id", req.context.request_id)
        request_context.request_id.set(req.context.request_id)
        request_context.session_id.set(None)
        request_context.sequence.set(None)

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        request_context.session_id.set(params.get("session_id"))


class DrainMiddleware:
    """While draining, new work (create, message) is refused with 503; reads still answer."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        if getattr(resource, "admits_work", False) and req.method == "POST" \
                and is_draining(self._data_dir):
            raise errors.Draining("the server is draining; retry on another instance or later")


class AuthMiddleware:
    """Bearer token check: the operator token, or a token good for one session alone.

    The operator token is compared in constant time. A session token reaches only its own
    session's routes: another session looks like it does not exist (404), and routes that are
    not about one session (list, create) are forbidden (403).
    """

    def __init__(self, operator_token: str, sessions_root: Path) -> None:
        self._operator_token = operator_token.encode()
        self._sessions_root = sessions_root

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if is_public(req.path):
            return
        header = req.get_header("Authorization") or ""
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise errors.Unauthorized("a bearer token is required")
        token = token.strip()
        if hmac.compare_digest(token.encode(), self._operator_token):
            req.context.principal = "operator"
            req.context.session_scope = None
            return
        session_id = session_of_token(self._sessions_root, token)
        if session_id is None:
            raise errors.Unauthorized("the token is not valid")
        req.context.principal = f"session:{session_id}"
        req.context.session_scope = session_id

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        scope = req.context.get("session_scope")
        if scope is None or is_public(req.path):
            return
        if getattr(resource, "scopes_itself", False):
            return  # not about one session: the resource narrows what it does to `scope`
        target = params.get("session_id")
        if target is None or getattr(resource, "operator_only", False):
            raise errors.Forbidden("a session token cannot do this")
        if target != scope:
            raise errors.NotFound("no such session")
