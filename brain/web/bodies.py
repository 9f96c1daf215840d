"""Reading request bodies: bounded size, JSON only, objects only.

A body comes with a Content-Length or chunked (`Transfer-Encoding: chunked`, which curl's
`--data-binary @-` and many proxies send); both are read up to the same limit. gunicorn decodes
the chunks; the body's time budget is kept by brain/web/timed_body.py.
"""

from __future__ import annotations

import json
import math
import re
from typing import IO, Any

import falcon

from brain import errors

CREATE_BODY_LIMIT = 4 << 20
MESSAGE_BODY_LIMIT = 1 << 20
SMALL_BODY_LIMIT = 64 << 10
MAX_JSON_DEPTH = 64  # deeper documents overflow the parser, pickling or the journal encoder


def human_size(limit: int) -> str:
    """A body limit as the docs write it: 64 KiB, 4 MiB."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if limit >= 1 << shift and limit % (1 << shift) == 0:
            return f"{limit >> shift} {unit}"
    return f"{limit} bytes"


def raw_body(req: falcon.Request, limit: int) -> bytes:
    """The request body, read once (idempotency fingerprints and JSON parsing share it).

    Past `limit` the rest is left unread: gunicorn reads and discards it after the 413, for
    at most its `keepalive` seconds, so the client is not cut off (a reset) mid-send before it
    reads the answer.
    """
    cached = req.context.get("raw_body")
    if cached is not None:
        return cached
    length = req.content_length
    if length is not None and length > limit:
        raise errors.PayloadTooLarge(f"the body exceeds {limit} bytes")
    stream = body_stream(req)
    raw = stream.read(limit + 1) if stream is not None else b""
    if len(raw) > limit:
        raise errors.PayloadTooLarge(f"the body exceeds {limit} bytes")
    req.context.raw_body = raw
    return raw


def is_chunked(req: falcon.Request) -> bool:
    """Whether the body is sent in chunks. gunicorn refuses any other transfer coding and a
    Content-Length beside this one, so there is nothing else to tell apart."""
    return "chunked" in (req.get_header("Transfer-Encoding") or "").lower()


def body_stream(req: falcon.Request) -> IO[bytes] | None:
    """Where the body is read from, or None when there is none.

    Falcon's `bounded_stream` stops at Content-Length, and so reads nothing of a chunked body,
    which has none: that one is read from the server's own stream, which ends at its last
    chunk.
    """
    if is_chunked(req) and req.content_length is None:
        return req.stream
    if req.content_length:
        return req.bounded_stream
    return None


def read_json_object(req: falcon.Request, limit: int, *, optional: bool = False) -> dict[str, Any]:
    """The body as a JSON object; 413 past `limit`, 415 for non-JSON, 400 for bad JSON."""
    raw = raw_body(req, limit)
    if not raw:
        if optional:
            return {}
        raise errors.InvalidRequest("a JSON body is required")
    content_type = media_type(req.content_type)
    if content_type is not None and content_type != falcon.MEDIA_JSON:
        raise errors.UnsupportedMediaType("the body must be application/json")
    try:
        body = json.loads(raw, parse_constant=_not_json, parse_float=_finite_float)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise errors.InvalidRequest(f"malformed JSON: {exc}") from None
    except (ValueError, RecursionError):  # 4300+ digit integers, absurd nesting
        raise errors.InvalidRequest("malformed JSON: a number or nesting beyond limits") from None
    if not isinstance(body, dict):
        raise errors.InvalidRequest("the body must be a JSON object")
    _check_storable(body)
    return body


TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
MEDIA_TYPE = re.compile(rf"\s*({TOKEN}/{TOKEN})\s*(;.*)?", re.DOTALL)


def media_type(header: str | None) -> str | None:
    """`type/subtype` of a Content-Type, lower-cased; None when there is none to read (the body
    is then read as JSON). A value that does not start with `type/subtype` (`;;;=`, `json`)
    is not JSON whatever it meant, so it is returned as written, and refused."""
    if header is None or not header.strip():
        return None
    match = MEDIA_TYPE.fullmatch(header)
    return match.group(1).lower() if match else header


def _not_json(name: str) -> Any:
    raise errors.InvalidRequest(f"malformed JSON: {name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise errors.InvalidRequest("malformed JSON: a number beyond the float range")
    return value


def _check_storable(body: Any) -> None:
    """Refuse what the journal cannot store: deep nesting and lone UTF-16 surrogates."""
    stack = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise errors.InvalidRequest(f"the body nests deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((k, depth) for k in value)
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise errors.InvalidRequest("malformed JSON: a lone surrogate escape") from None
