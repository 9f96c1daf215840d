"""Reading request bodies: bounded size, JSON only, objects only."""

from __future__ import annotations

import json
import math
from typing import Any

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
    """The request body, read once (idempotency fingerprints and JSON parsing share it)."""
    cached = req.context.get("raw_body")
    if cached is not None:
        return cached
    length = req.content_length
    if length is not None and length > limit:
        raise errors.PayloadTooLarge(f"the body exceeds {limit} bytes")
    raw = req.bounded_stream.read(limit + 1) if (length or req.get_header("Transfer-Encoding")) \
        else b""
    if len(raw) > limit:
        raise errors.PayloadTooLarge(f"the body exceeds {limit} bytes")
    req.context.raw_body = raw
    return raw


def read_json_object(req: falcon.Request, limit: int, *, optional: bool = False) -> dict[str, Any]:
    """The body as a JSON object; 413 past `limit`, 415 for non-JSON, 400 for bad JSON."""
    raw = raw_body(req, limit)
    if not raw:
        if optional:
            return {}
        raise errors.InvalidRequest("a JSON body is required")
    content_type = (req.content_type or "").split(";")[0].strip().lower()
    if content_type and content_type != falcon.MEDIA_JSON:
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
