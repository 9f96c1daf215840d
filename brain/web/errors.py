"""The one place where exceptions become the contract's error shape.

`{"error": {"code", "message", "request_id"}}`. Brain's own errors carry their code; Falcon's
HTTP errors (unknown route, wrong method) are mapped by status; anything else is `internal`
with a message that reveals nothing about the server's insides. Requests gunicorn's parser
refuses before the app sees them (an overlong header, a bad request line) are mapped here too,
by `refusal`, and written by the worker (brain/web/gunicorn_worker.py) in the same shape.
"""

from __future__ import annotations

import json
import logging
import ssl
from http import HTTPStatus
from typing import Any

import falcon
from gunicorn.http import errors as parse_errors

from brain import errors

log = logging.getLogger(__name__)

STATUS_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "invalid_request",
    408: "request_timeout",
    411: "invalid_request",
    413: "payload_too_large",
    414: "invalid_request",
    415: "unsupported_media_type",
    417: "invalid_request",
    431: "invalid_request",
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


PARSE_REFUSALS: tuple[tuple[type[BaseException], int, str], ...] = (
    # The application's own bad response header is the server's fault, not the client's.
    ((parse_errors.InvalidResponseHeader, parse_errors.InvalidResponseHeaderName), 500, ""),
    (parse_errors.LimitRequestLine, 414, "the request line is too long"),
    (parse_errors.LimitRequestHeaders, 431, "a header field, or the header section, is too large"),
    (parse_errors.ExpectationFailed, 417, "unsupported Expect header"),
    # RFC 9112 suggests 501 for a transfer coding the server does not read; Brain keeps every
    # malformed request under 400 invalid_request, so 5xx still means the server failed.
    (parse_errors.UnsupportedTransferCoding, 400, "unsupported transfer coding (only chunked)"),
    ((parse_errors.ForbiddenProxyRequest, ssl.SSLError), 403, "request forbidden"),
    (parse_errors.ConfigurationProblem, 500, ""),
    (parse_errors.InvalidRequestLine, 400, "malformed request line"),
    (parse_errors.InvalidRequestMethod, 400, "malformed method"),
    (parse_errors.InvalidHTTPVersion, 400, "unsupported HTTP version"),
    ((parse_errors.InvalidHeader, parse_errors.InvalidHeaderName, parse_errors.ObsoleteFolding),
     400, "malformed header"),
    ((parse_errors.InvalidChunkSize, parse_errors.ChunkMissingTerminator,
      parse_errors.InvalidChunkExtension), 400, "malformed chunked body"),
    (parse_errors.ParseException, 400, "malformed request"),
)
"""gunicorn's parser exceptions, most specific first: (types, status, what the client is told)."""

DETAIL_CHARS = 200  # a refused request line or header is echoed back at most this long


def refusal(exc: BaseException) -> errors.BrainError:
    """The contract error for a request refused below the app: by gunicorn's parser, by the
    worker's own header checks or by a body read. Brain's own errors pass through; an
    exception nobody expected is `internal`, revealing nothing."""
    if isinstance(exc, errors.BrainError):
        return exc
    status, summary = next(((status, summary) for types, status, summary in PARSE_REFUSALS
                            if isinstance(exc, types)), (500, ""))
    if status >= 500:
        return errors.Internal("internal error")
    detail = str(exc)
    if len(detail) > DETAIL_CHARS:
        detail = detail[:DETAIL_CHARS] + "…"
    error = errors.BY_CODE[STATUS_CODES.get(status, "invalid_request")](
        f"{summary}: {detail}" if detail else summary)
    error.status = status
    return error


def raw_error_response(error: errors.BrainError, request_id: str) -> bytes:
    """A whole HTTP/1.1 answer carrying `error`, for a connection the app never saw: it
    closes the connection, since where the refused request ends is unknown."""
    body = error_body(error.code, error.message, request_id).encode()
    try:
        reason = HTTPStatus(error.status).phrase
    except ValueError:
        reason = "Error"
    head = (f"HTTP/1.1 {error.status} {reason}\r\n"
            "Connection: close\r\n"
            f"Content-Type: {falcon.MEDIA_JSON}\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"X-Request-Id: {request_id}\r\n\r\n")
    return head.encode("latin-1") + body


def install(app: falcon.App) -> None:
    # Falcon tries the most specific registered type first.
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(falcon.HTTPError, handle_http_error)
    app.add_error_handler(errors.BrainError, handle_brain_error)
