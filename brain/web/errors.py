"""The one place where exceptions become the contract's error shape.

`{"error": {"code", "message", "request_id"}}`. Brain's own errors carry their code; Falcon's
HTTP errors (unknown route, wrong method) are mapped by status; anything else is `internal`
with a message that reveals nothing about the server's insides.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import falcon

from brain import errors

log = logging.getLogger(__name__)

STATUS_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "invalid_request",
    411: "invalid_request",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


RETRY_AFTER_SECS = 1
"""Retry-After of a 503 (`overloaded`, `draining`) unless the error names its own (a full
backlog estimates its drain time): a shed request is cheap to retry."""


def error_body(code: str, message: str, request_id: str) -> str:
    return json.dumps({"error": {"code": code, "message": message, "request_id": request_id}})


def _respond(req: falcon.Request, resp: falcon.Response, status: int, code: str,
             message: str) -> None:
    resp.status = status
    resp.content_type = falcon.MEDIA_JSON
    resp.text = error_body(code, message, req.context.get("request_id", ""))
    resp.data = None
    resp.stream = None


def handle_brain_error(req: falcon.Request, resp: falcon.Response, ex: errors.BrainError,
                       params: dict[str, Any]) -> None:
    _respond(req, resp, ex.status, ex.code, ex.message)
    if ex.status in (429, 503):  # shed load: say when to come back
        resp.set_header("Retry-After", str(ex.retry_after if ex.retry_after is not None
                                              else RETRY_AFTER_SECS))
    if isinstance(ex, errors.Overloaded):
        # Shed before anything acted on it: its Idempotency-Key is free for the retry.
        req.context.nothing_done = True
    if ex.code == "unauthorized":
        resp.set_header("WWW-Authenticate", "Bearer")


def handle_http_error(req: falcon.Request, resp: falcon.Response, ex: falcon.HTTPError,
                      params: dict[str, Any]) -> None:
    status = int(str(ex.status).split()[0]) if not isinstance(ex.status, int) else ex.status
    code = STATUS_CODES.get(status, "internal" if status >= 500 else "invalid_request")
    message = ex.title or "request refused"
    if ex.description:
        message = f"{message}: {ex.description}"
    _respond(req, resp, status, code, message)
    for name, value in (ex.headers or {}).items():
        resp.set_header(name, value)


def handle_unexpected(req: falcon.Request, resp: falcon.Response, ex: Exception,
                      params: dict[str, Any]) -> None:
    log.exception("unhandled error in %s %s", req.method, req.path)
    _respond(req, resp, 500, "internal", "internal error")


def install(app: falcon.App) -> None:
    # Falcon tries the most specific registered type first.
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(falcon.HTTPError, handle_http_error)
    app.add_error_handler(errors.BrainError, handle_brain_error)
