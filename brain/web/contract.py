"""What a responder promises, declared on the responder itself.

`@operation(...)` sits on an `on_<method>` responder and says, once, what the route accepts
(body shape and size limit, query parameters, request headers) and what it answers (statuses,
shapes, headers, error statuses). The decorator holds the request to it before the responder
runs — the body lands checked in `req.context.body`, the query in `req.context.query` — and the
OpenAPI document (brain/web/openapi.py) is generated from the same declarations.

Constants that both the contract and the code need live here once: the session id pattern,
the largest sequence, the session statuses.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import falcon

from brain.errors import InvalidRequest
from brain.web.bodies import SMALL_BODY_LIMIT, read_json_object
from brain.web.schema import Schema, check

SESSION_ID_PATTERN = "^[A-Za-z0-9_-]{1,64}$"
SESSION_ID = re.compile(SESSION_ID_PATTERN)
MAX_SEQUENCE = 2**63 - 1
SESSION_STATUSES = ("creating", "idle", "running", "ending", "ended", "failed", "damaged")

# Which error statuses each kind of operation can answer.
READ_ERRORS = (400, 401, 404, 500)
WRITE_ERRORS = (400, 401, 403, 404, 409, 413, 415, 500)

IGNORED_BODY: dict[str, Any] = {"type": "object"}  # an optional body whose fields are ignored


@dataclass(frozen=True)
class Answer:
    """One success status: what it means, its body shape and the headers it carries."""

    description: str
    body: Schema | dict[str, Any] | None = None
    headers: tuple[str, ...] = ()
    content: dict[str, Any] | None = None  # other media types, as the document writes them


@dataclass(frozen=True)
class Operation:
    """One route and method as the HTTP contract states it."""

    operation_id: str
    summary: str
    answers: dict[int, Answer]
    errors: tuple[int, ...] = ()
    body: Schema | dict[str, Any] | None = None
    body_required: bool = False
    body_limit: int = SMALL_BODY_LIMIT
    query: dict[str, dict[str, Any]] = field(default_factory=dict)
    headers: tuple[str, ...] = ()  # request headers, by name: Prefer, Last-Event-ID

    def read_body(self, req: falcon.Request) -> dict[str, Any]:
        """The body as JSON within the limit (413, 415, 400), then held to its shape (400)."""
        body = read_json_object(req, self.body_limit, optional=not self.body_required)
        if self.body is not None:
            check(self.body, body)
        return body

    def read_query(self, req: falcon.Request) -> dict[str, Any]:
        """Each declared query parameter, converted and checked; absent ones take the default."""
        return {name: _query_value(req.get_param(name), spec, name)
                for name, spec in self.query.items()}


Responder = Callable[..., None]


def operation(operation_id: str, summary: str, answers: dict[int, Answer],
              **declared: Any) -> Callable[[Responder], Responder]:
    """Declare the responder's contract and check each request against it before it runs."""
    contract = Operation(operation_id, summary, answers, **declared)

    def decorate(responder: Responder) -> Responder:
        @functools.wraps(responder)
        def checked(resource: Any, req: falcon.Request, resp: falcon.Response,
                    **params: Any) -> None:
            if contract.query:
                req.context.query = contract.read_query(req)
            if contract.body is not None or contract.body_required:
                req.context.body = contract.read_body(req)
            responder(resource, req, resp, **params)

        checked.operation = contract  # type: ignore[attr-defined]
        return checked

    return decorate


def operation_of(responder: Any) -> Operation | None:
    """The declaration a responder (bound or not) was given by `@operation`, if any."""
    return getattr(responder, "operation", None)


def _query_value(raw: str | None, spec: dict[str, Any], name: str) -> Any:
    if raw is None:
        return spec.get("default")
    value: Any = raw
    if spec.get("type") == "integer":
        try:
            value = int(raw)
        except ValueError:
            raise InvalidRequest(f"{name}: expected an integer") from None
    check(spec, value, name)
    return value
