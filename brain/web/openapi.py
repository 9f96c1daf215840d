"""The OpenAPI 3.0.3 document of the HTTP API, generated from the app itself.

Nothing here restates the API. The paths and methods are the routes the Falcon app serves
(`falcon.inspect`); each responder's `@operation` declaration (brain/web/contract.py) gives its
summary, body, parameters and answers; a resource's `idempotent` attribute adds the
Idempotency-Key header; the error responses, their codes and statuses come from
brain/errors.py; the probes are public because AuthMiddleware says so. A served route without a
declaration cannot be documented, so the app refuses to start with one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import falcon
import falcon.inspect

from brain import errors
from brain.config import BrainConfig
from brain.errors import BY_CODE
from brain.web.bodies import human_size
from brain.web.contract import (
    IGNORED_BODY,
    SESSION_ID_PATTERN,
    Answer,
    Operation,
    operation,
    operation_of,
)
from brain.web.forwarding import SESSION_PREFIX
from brain.web.idempotency import MAX_KEY_LENGTH
from brain.web.middleware import is_public
from brain.web.resources.console import ASSETS as CONSOLE_ASSETS
from brain.web.schema import Schema

OPENAPI_VERSION = "3.0.3"
API_VERSION = "0.1.0"

PATH_PARAMETERS = {
    "session_id": {"$ref": "#/components/parameters/SessionId"},
    "call_id": {"name": "call_id", "in": "path", "required": True, "schema": {"type": "string"}},
    "asset": {"name": "asset", "in": "path", "required": True,
              "schema": {"type": "string", "enum": sorted(CONSOLE_ASSETS)}},
}
REQUEST_HEADERS = {  # HTTP name -> (component name, parameter)
    "Idempotency-Key": ("IdempotencyKey", {
        "description": f"1-{MAX_KEY_LENGTH} visible ASCII characters. The answer is stored with "
        "the key and replayed byte for byte for 24 h; another body under the same key is 409.",
        "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH,
                   "pattern": "^[!-~]+$"},
    }),
    "Prefer": ("Prefer", {
        "description": "Preferences, comma-separated. `respond-async`: answer 202 with a "
        "Receipt once the turn is durably started, instead of waiting for its result. Any "
        "other preference is ignored (the turn is waited for), as RFC 7240 asks.",
        "schema": {"type": "string"},
    }),
    "Last-Event-ID": ("LastEventId", {
        "description": "A sequence; overrides `after` (what SSE clients send on reconnect).",
        "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"},
    }),
}
RESPONSE_HEADERS = {  # HTTP name -> (component name, header)
    "X-Request-Id": ("RequestId", {"description": "This request's id, also in error bodies.",
                                   "schema": {"type": "string"}}),
    "Location": ("Location", {"description": "The session's URL.", "schema": {"type": "string"}}),
    "Preference-Applied": ("PreferenceApplied", {"description": "`respond-async`",
                                                 "schema": {"type": "string"}}),
}

ERROR = Schema("Error", {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "request_id"],
            "properties": {
                "code": {"type": "string", "enum": sorted(BY_CODE)},
                "message": {"type": "string"},
                "request_id": {"type": "string"},
            },
        },
    },
}, "error")


def served_operations(app: falcon.App) -> Iterator[tuple[str, str, Any, Operation]]:
    """(path, METHOD, resource, declaration) for every responder of the app's own.

    Raises LookupError for a responder without an `@operation` declaration.
    """
    for route in falcon.inspect.inspect_routes(app):
        # The compiled router matches a template's own text, "{name}" filling each field.
        resource, method_map, _, template = app._router.find(route.path)
        if template != route.path:
            raise LookupError(f"{route.path} does not route to itself")
        for method in route.methods:
            if method.internal:
                continue
            declared = operation_of(method_map[method.method])
            if declared is None:
                raise LookupError(f"{method.method} {route.path} has no @operation declaration")
            yield route.path, method.method, resource, declared


def openapi_document(app: falcon.App, config: BrainConfig | None = None) -> dict[str, Any]:
    """The document of `app`; with `config`, create-body names are limited to configured ones."""
    schemas = _Schemas(config)
    paths: dict[str, Any] = {}
    for path, method, resource, declared in served_operations(app):
        item = paths.setdefault(path, {})
        fields = re.findall(r"{(\w+)}", path)
        if fields:
            item["parameters"] = [PATH_PARAMETERS[name] for name in fields]
        scoped = method in getattr(resource, "idempotent", {})
        item[method.lower()] = _operation(declared, path, scoped, schemas)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Brain",
            "version": API_VERSION,
            "description": "Durable, journaled sessions for AI agents. See docs/http-api.md.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {
                "type": "http", "scheme": "bearer",
                "description": "The operator token, or a session token from POST tokens.",
            }},
            "responses": _error_responses(schemas),
            "schemas": schemas.components,
            "parameters": _parameters(),
            "headers": {name: header for name, header in RESPONSE_HEADERS.values()},
        },
    }


def _operation(declared: Operation, path: str, idempotent: bool,
               schemas: _Schemas) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": declared.operation_id, "summary": declared.summary}
    headers = (("Idempotency-Key",) if idempotent else ()) + declared.headers
    parameters = [{"$ref": f"#/components/parameters/{REQUEST_HEADERS[h][0]}"} for h in headers]
    parameters += [{"name": name, "in": "query", "required": False, **_described(spec, schemas)}
                   for name, spec in declared.query.items()]
    if parameters:
        op["parameters"] = parameters
    if declared.body is not None or declared.body_required:
        op["requestBody"] = _request_body(declared, schemas)
    op["responses"] = {
        **{str(status): _answer(answer, schemas) for status, answer in declared.answers.items()},
        **{str(s): {"$ref": f"#/components/responses/E{s}"} for s in declared.errors},
    }
    if path.startswith(SESSION_PREFIX):
        # Several hosts: any front end answers `unavailable` for a session whose member is down.
        op["responses"]["503"] = {"$ref": "#/components/responses/E503"}
    if is_public(path):
        op["security"] = []
    return op


def _described(spec: dict[str, Any], schemas: _Schemas) -> dict[str, Any]:
    """A query parameter: its description beside the schema, as OpenAPI places it."""
    spec = dict(spec)
    description = spec.pop("description", None)
    return {**({"description": description} if description else {}),
            "schema": schemas.render(spec)}


def _request_body(declared: Operation, schemas: _Schemas) -> dict[str, Any]:
    size = human_size(declared.body_limit)
    if declared.body is IGNORED_BODY:
        description = f"Optional; if present, a JSON object ({size} max) whose fields are ignored."
    else:
        description = f"At most {size}; application/json."
    return {"required": declared.body_required, "description": description,
            "content": {"application/json": {"schema": schemas.render(declared.body)}}}


def _answer(answer: Answer, schemas: _Schemas) -> dict[str, Any]:
    rendered: dict[str, Any] = {"description": answer.description}
    content = {}
    if answer.body is not None:
        content["application/json"] = {"schema": schemas.render(answer.body)}
    content.update(answer.content or {})
    if content:
        rendered["content"] = content
    rendered["headers"] = {
        name: {"$ref": f"#/components/headers/{RESPONSE_HEADERS[name][0]}"}
        for name in ("X-Request-Id", *answer.headers)
    }
    return rendered


def _error_responses(schemas: _Schemas) -> dict[str, Any]:
    """One response per error status, listing the codes brain/errors.py gives that status."""
    by_status: dict[int, list[str]] = {}
    for code, cls in BY_CODE.items():
        by_status.setdefault(cls.status, []).append(f"{code}: {cls.__doc__}")
    responses = {
        f"E{status}": {"description": "; ".join(meanings),
                       "content": {"application/json": {"schema": schemas.render(ERROR)}}}
        for status, meanings in sorted(by_status.items())
    }
    responses["E401"]["headers"] = {
        "WWW-Authenticate": {"description": "`Bearer`", "schema": {"type": "string"}},
    }
    responses["E503"]["headers"] = {
        "Retry-After": {"description": "seconds to wait before retrying (`unavailable`)",
                        "schema": {"type": "integer"}},
    }
    return responses


def _parameters() -> dict[str, Any]:
    parameters = {"SessionId": {"name": "session_id", "in": "path", "required": True,
                                "schema": {"type": "string", "pattern": SESSION_ID_PATTERN}}}
    for name, (component, parameter) in REQUEST_HEADERS.items():
        parameters[component] = {"name": name, "in": "header", "required": False, **parameter}
    return parameters


class _Schemas:
    """Renders declared shapes for the document, collecting each named one as a component."""

    def __init__(self, config: BrainConfig | None) -> None:
        self.config = config
        self.components: dict[str, Any] = {}
        self._named: dict[str, Schema] = {}

    def render(self, spec: Any) -> Any:
        if isinstance(spec, Schema):
            return {"$ref": self._component(spec)}
        if isinstance(spec, list):
            return [self.render(item) for item in spec]
        if not isinstance(spec, dict):
            return spec
        rendered = {key: self.render(value) for key, value in spec.items()
                    if not key.startswith("x-")}
        if isinstance(rendered.get("$ref"), dict):  # a nullable named shape: keep one $ref
            rendered["$ref"] = rendered["$ref"]["$ref"]
        kind = spec.get("x-configured")
        if kind is not None and self.config is not None:
            names = [*sorted(getattr(self.config, kind)),
                     *([None] if spec.get("nullable") else [])]
            if names:
                rendered["enum"] = names
            else:  # nothing of this kind is configured: no value is valid (an empty enum is
                rendered["not"] = {}  # not allowed in OpenAPI)
        return rendered

    def _component(self, schema: Schema) -> str:
        known = self._named.get(schema.name)
        if known is None:
            self._named[schema.name] = schema
            self.components[schema.name] = None  # reserved first: shapes may refer to themselves
            self.components[schema.name] = self.render(schema.spec)
        elif known is not schema:
            raise ValueError(f"two different shapes are both named {schema.name}")
        return f"#/components/schemas/{schema.name}"


class OpenApiResource:
    """GET /openapi.json: the document, rendered once (the routes never change while serving)."""

    def __init__(self) -> None:
        self._body: str | None = None

    def publish(self, document: dict[str, Any]) -> None:
        self._body = json.dumps(document, separators=(",", ":"))

    @operation("openapi", "This document",
               {200: Answer("OpenAPI document", {"type": "object"})}, errors=(401, 403, 500))
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self._body is None:
            raise errors.Internal("the document is not published yet")
        resp.content_type = falcon.MEDIA_JSON
        resp.text = self._body
