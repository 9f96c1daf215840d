"""The OpenAPI 3.0.3 document of the HTTP API (docs/http-api.md), and a drift check.

The document is built in code, next to the routes it describes, so that `check_routes` can
compare it with the Falcon app on every test run: a route added without documentation, or a
documented route nobody serves, fails a unit test instead of surprising a client. Schemas say
only what the server really guarantees, because the schemathesis fuzz test validates live
responses against them.
"""

from __future__ import annotations

import json
from typing import Any

import falcon
import falcon.inspect

from brain.config import MESSAGE_ROLES, BrainConfig
from brain.host import DEFAULT_CALLS_PER_POLL, DEFAULT_WAIT_SECS, MAX_CALLS_PER_POLL, MAX_WAIT_SECS

OPENAPI_VERSION = "3.0.3"
API_VERSION = "0.1.0"

ERROR_CODES = (
    "invalid_request", "unauthorized", "forbidden", "not_found", "session_busy",
    "session_ended", "session_active", "idempotency_conflict", "request_in_progress",
    "idempotency_ambiguous", "payload_too_large", "unsupported_media_type", "session_damaged",
    "teardown_failed", "draining", "internal", "already_answered",
)  # fmt: skip
SESSION_STATUSES = ("creating", "idle", "running", "ending", "ended", "failed", "damaged")
SESSION_ID_PATTERN = "^[A-Za-z0-9_-]{1,64}$"
MAX_SEQUENCE = 2**63 - 1
# The largest integer every JSON client reads exactly; far above any sensible retention, and
# below where the actor runtime's timers overflow (about 8.6e16 ms).
MAX_IDLE_TTL_MS = 2**53 - 1

ERROR_MEANINGS = {
    400: "invalid_request: a malformed body, parameter or header",
    401: "unauthorized: no bearer token, or a token this server did not issue",
    403: "forbidden: a session token used on a route that is not about its own session",
    404: "not_found: no such session (or another session, for a session token)",
    409: "session_busy, session_ended, session_active, idempotency_conflict, "
    "request_in_progress, idempotency_ambiguous, or already_answered (a host call)",
    413: "payload_too_large: the body exceeds this route's limit",
    415: "unsupported_media_type: a body that is not application/json",
    500: "session_damaged (the journal is refused) or internal",
    502: "teardown_failed: an Environment could not be torn down",
    503: "draining: the server is shutting down and admits no new work",
}

# Which error statuses each kind of operation can answer.
READ_ERRORS = (400, 401, 404, 500)
WRITE_ERRORS = (400, 401, 403, 404, 409, 413, 415, 500)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "nullable": True}


def _optional(schema: dict[str, Any]) -> dict[str, Any]:
    """A create-body field that may be null (= absent); an enum must then list null too."""
    if "enum" in schema:
        schema = {**schema, "enum": [*schema["enum"], None]}
    return _nullable(schema)


def _schemas(config: BrainConfig | None) -> dict[str, Any]:
    """Component schemas; with a config, create-body names are enumerated from it."""

    def names(kind: str) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        if config is not None:
            schema["enum"] = sorted(getattr(config, kind))
        return schema

    sequence = {"type": "integer", "minimum": 1, "maximum": MAX_SEQUENCE}
    timestamp = {"type": "string", "format": "date-time", "description": "RFC 3339, UTC, ms"}
    return {
        "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["code", "message", "request_id"],
                    "properties": {
                        "code": {"type": "string", "enum": list(ERROR_CODES)},
                        "message": {"type": "string"},
                        "request_id": {"type": "string"},
                    },
                },
            },
        },
        "TurnError": {
            "type": "object",
            "description": "A failed turn's error: the API codes plus model_call_limit, "
            "turn_timeout, cancelled, agentloop_error, emit_limit, interrupted.",
            "required": ["code"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        },
        "Turn": {
            "type": "object",
            "required": ["sequence", "status"],
            "properties": {
                "sequence": sequence,
                "status": {"type": "string", "enum": ["running", "ended", "failed"]},
                "error": _nullable(_ref("TurnError")),
            },
        },
        "Session": {
            "type": "object",
            "required": ["id", "status", "created_at", "updated_at", "last_sequence", "config"],
            "properties": {
                "id": {"type": "string", "pattern": SESSION_ID_PATTERN},
                "status": {"type": "string", "enum": list(SESSION_STATUSES)},
                "created_at": _nullable(timestamp),
                "updated_at": _nullable(timestamp),
                "last_sequence": _nullable({"type": "integer", "minimum": 0}),
                "config": _nullable(
                    {
                        "type": "object",
                        "description": "The resolved creation configuration, as session_created "
                        "recorded it; null only for a damaged session.",
                    }
                ),
                "turn": _nullable(_ref("Turn")),
            },
        },
        "SessionList": {
            "type": "object",
            "required": ["sessions", "next_cursor"],
            "properties": {
                "sessions": {"type": "array", "items": _ref("Session"), "maxItems": 100},
                "next_cursor": _nullable({"type": "string", "pattern": SESSION_ID_PATTERN}),
            },
        },
        "CreateBody": {
            "type": "object",
            "additionalProperties": False,
            "description": "Only names defined in the server configuration; never secrets. "
            "Every field is optional, and null means the same as absent.",
            "properties": {
                "agentloop": _optional(names("agentloops")),
                "model": _optional(names("models")),
                "tools": _optional(
                    {"type": "array", "items": names("tools"), "uniqueItems": True}
                ),
                "environments": _optional(
                    {"type": "array", "items": names("environments"), "uniqueItems": True}
                ),
                "transcript": _optional(
                    {
                        "type": "array",
                        "items": _ref("Message"),
                        "description": "Messages to seed the session's opening conversation.",
                    }
                ),
                "idle_ttl_ms": _optional(
                    {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": MAX_IDLE_TTL_MS,
                        "description": "Keep the actor this long after work; 0 = forever; "
                        "absent or null = the server-wide BRAIN_SESSION_IDLE_TTL_MS.",
                    }
                ),
                "metadata": _optional({"type": "object"}),
            },
        },
        "Message": {
            "type": "object",
            "required": ["role", "content"],
            "properties": {
                "role": {"type": "string", "enum": list(MESSAGE_ROLES)},
                "content": {
                    "oneOf": [
                        {"type": "string"},
                        {"type": "array", "items": _ref("ContentBlock")},
                    ],
                },
            },
        },
        "ContentBlock": {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"type": "string"}},
        },
        "MessageBody": {
            "type": "object",
            "additionalProperties": False,
            "required": ["input"],
            "properties": {
                "input": {
                    "oneOf": [
                        {"type": "string"},
                        {"type": "array", "items": _ref("ContentBlock")},
                    ],
                },
            },
        },
        "Receipt": {
            "type": "object",
            "required": ["session_id", "sequence"],
            "properties": {"session_id": {"type": "string"}, "sequence": sequence},
        },
        "TurnResult": {
            "type": "object",
            "required": ["session_id", "sequence", "status"],
            "properties": {
                "session_id": {"type": "string"},
                "sequence": sequence,
                "status": {"type": "string", "enum": ["ended", "failed"]},
                "output": {"description": "The Agentloop's output, verbatim (any JSON)."},
                "error": _nullable(_ref("TurnError")),
            },
        },
        "CancelAnswer": {
            "type": "object",
            "required": ["session_id", "sequence"],
            "properties": {
                "session_id": {"type": "string"},
                "sequence": _nullable(
                    {
                        **sequence,
                        "description": "The cancel_requested record; null when nothing ran.",
                    }
                ),
            },
        },
        "Origin": {
            "type": "object",
            "required": ["kind", "sequence"],
            "properties": {
                "kind": {"type": "string", "enum": ["agentloop", "tool"]},
                "sequence": sequence,
            },
        },
        "Event": {
            "type": "object",
            "required": ["sequence", "kind", "at", "data"],
            "properties": {
                "sequence": sequence,
                "kind": {"type": "string"},
                "at": timestamp,
                "data": {"description": "The record's fields (any JSON)."},
                "origin": _ref("Origin"),
            },
        },
        "Page": {
            "type": "object",
            "required": ["events", "next_after", "has_more"],
            "properties": {
                "events": {"type": "array", "items": _ref("Event"), "maxItems": 1000},
                "next_after": {"type": "integer", "minimum": 0, "maximum": MAX_SEQUENCE},
                "has_more": {"type": "boolean"},
            },
        },
        "Transcript": {
            "type": "object",
            "required": ["messages", "through_sequence"],
            "properties": {
                "messages": {"type": "array", "items": {"type": "object"}},
                "through_sequence": {"type": "integer", "minimum": 0},
            },
        },
        "Token": {
            "type": "object",
            "required": ["token"],
            "properties": {"token": {"type": "string", "minLength": 1}},
        },
        "Probe": {
            "type": "object",
            "required": ["status"],
            "properties": {"status": {"type": "string"}},
        },
        **_host_schemas(sequence),
    }


def _host_schemas(sequence: dict[str, Any]) -> dict[str, Any]:
    """Host calls (docs/host-tools.md): a poll, the calls it hands out, and a host's answer."""
    names = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    return {
        "HostPollBody": {
            "type": "object",
            "additionalProperties": False,
            "description": "Names of configured host Tools and Environments this host serves "
            "(at least one in all).",
            "properties": {
                "tools": names,
                "environments": names,
                "wait_secs": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECS,
                              "default": DEFAULT_WAIT_SECS},
                "max_calls": {"type": "integer", "minimum": 0, "maximum": MAX_CALLS_PER_POLL,
                              "default": DEFAULT_CALLS_PER_POLL},
                "host_id": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,64}$",
                            "description": "This host's id: a newer poll with the same id "
                            "answers its waiting predecessor at once, empty."},
            },
        },
        "HostCall": {
            "type": "object",
            "required": ["call_id", "kind", "name", "session_id", "sequence", "deadline"],
            "properties": {
                "call_id": {"type": "string"},
                "kind": {"type": "string", "enum": ["tool", "environment"]},
                "name": {"type": "string"},
                "session_id": {"type": "string", "pattern": SESSION_ID_PATTERN},
                "sequence": sequence,
                "deadline": _nullable({"type": "number", "description": "Epoch seconds."}),
                "input": {"description": "A Tool call's input (any JSON)."},
                "op": {"type": "string", "enum": ["setup", "exec", "read", "write", "detach",
                                                  "teardown"]},
                "request": {"type": "object"},
            },
        },
        "HostPollAnswer": {
            "type": "object",
            "required": ["calls", "cancel"],
            "properties": {
                "calls": {"type": "array", "items": _ref("HostCall"),
                          "maxItems": MAX_CALLS_PER_POLL},
                "cancel": {"type": "array", "items": {"type": "string"},
                           "description": "Calls handed to this host that Brain cancelled."},
            },
        },
        "HostAnswerBody": {
            "type": "object",
            "description": "A Tool: `{content, is_error?, events?, outcome?: ok|cancelled}`. "
            "An Environment op: `{result: {...}}` or `{error: {message, outcome?}}`.",
        },
        "Accepted": {
            "type": "object",
            "required": ["accepted"],
            "properties": {"accepted": {"type": "boolean", "enum": [True]}},
        },
    }


def _parameters() -> dict[str, Any]:
    return {
        "SessionId": {
            "name": "session_id",
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": SESSION_ID_PATTERN},
        },
        "IdempotencyKey": {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "1-255 visible ASCII characters. The answer is stored with the key "
            "and replayed byte for byte for 24 h; another body under the same key is 409.",
            "schema": {
                "type": "string",
                "minLength": 1,
                "maxLength": 255,
                "pattern": "^[!-~]+$",
            },
        },
        "Prefer": {
            "name": "Prefer",
            "in": "header",
            "required": False,
            "description": "`respond-async`: answer 202 with a Receipt once the turn is "
            "durably started, instead of waiting for its result.",
            "schema": {"type": "string", "enum": ["respond-async"]},
        },
        "LastEventId": {
            "name": "Last-Event-ID",
            "in": "header",
            "required": False,
            "description": "A sequence; overrides `after` (what SSE clients send on reconnect).",
            "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"},
        },
    }


def _headers() -> dict[str, Any]:
    return {
        "RequestId": {
            "description": "This request's id, also in error bodies.",
            "schema": {"type": "string"},
        },
        "Location": {"description": "The session's URL.", "schema": {"type": "string"}},
        "PreferenceApplied": {
            "description": "`respond-async`",
            "schema": {"type": "string"},
        },
    }


HEADER_NAMES = {"RequestId": "X-Request-Id", "PreferenceApplied": "Preference-Applied"}


def _errors(statuses: tuple[int, ...]) -> dict[str, Any]:
    return {str(s): {"$ref": f"#/components/responses/E{s}"} for s in statuses}


def _ok(
    description: str, schema_name: str | None, status: int = 200, headers: tuple[str, ...] = ()
) -> dict[str, Any]:
    response: dict[str, Any] = {"description": description}
    if schema_name is not None:
        response["content"] = _json(_ref(schema_name))
    response["headers"] = {
        HEADER_NAMES.get(h, h): {"$ref": f"#/components/headers/{h}"}
        for h in ("RequestId", *headers)
    }
    return {str(status): response}


def _json_body(schema_name: str, required: bool, limit: str) -> dict[str, Any]:
    return {
        "required": required,
        "description": f"At most {limit}; application/json.",
        "content": _json(_ref(schema_name)),
    }


def _empty_body() -> dict[str, Any]:
    return {
        "required": False,
        "description": "Optional; if present, a JSON object (64 KiB max) whose fields are ignored.",
        "content": _json({"type": "object"}),
    }


def _operation(
    op_id: str,
    summary: str,
    responses: dict[str, Any],
    parameters: tuple[str, ...] = (),
    body: dict[str, Any] | None = None,
    public: bool = False,
) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": op_id, "summary": summary, "responses": responses}
    if parameters:
        op["parameters"] = [{"$ref": f"#/components/parameters/{p}"} for p in parameters]
    if body is not None:
        op["requestBody"] = body
    if public:
        op["security"] = []
    return op


def _paths() -> dict[str, Any]:
    sid = {"parameters": [{"$ref": "#/components/parameters/SessionId"}]}
    return {
        "/v1/sessions": {
            "post": _operation(
                "createSession",
                "Create a session from configured names",
                {
                    **_ok("The new session", "Session", 201, ("Location",)),
                    **_errors((*WRITE_ERRORS, 503)),
                },
                ("IdempotencyKey",),
                _json_body("CreateBody", False, "4 MiB"),
            ),
            "get": _operation(
                "listSessions",
                "List sessions, newest first",
                {**_ok("A page of sessions", "SessionList"), **_errors((400, 401, 403, 500))},
            )
            | {
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 100},
                    },
                    {
                        "name": "cursor",
                        "in": "query",
                        "required": False,
                        "description": "`next_cursor` of the previous page.",
                        "schema": {"type": "string", "pattern": SESSION_ID_PATTERN},
                    },
                    {
                        "name": "status",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string", "enum": list(SESSION_STATUSES)},
                    },
                ]
            },
        },
        "/v1/sessions/{session_id}": sid
        | {
            "get": _operation(
                "getSession",
                "Read a session (never activates it)",
                {**_ok("The session", "Session"), **_errors(READ_ERRORS)},
            ),
            "delete": _operation(
                "deleteSession",
                "Delete an ended, failed or damaged session",
                {"204": {"description": "Deleted"}, **_errors((*WRITE_ERRORS, 502))},
                ("IdempotencyKey",),
            ),
        },
        "/v1/sessions/{session_id}/messages": sid
        | {
            "post": _operation(
                "sendMessage",
                "Run a turn (sync), or submit it (Prefer: respond-async)",
                {
                    **_ok("The finished turn", "TurnResult"),
                    **_ok(
                        "The turn is durably started",
                        "Receipt",
                        202,
                        ("Location", "PreferenceApplied"),
                    ),
                    **_errors((*WRITE_ERRORS, 503)),
                },
                ("IdempotencyKey", "Prefer"),
                _json_body("MessageBody", True, "1 MiB"),
            ),
        },
        "/v1/sessions/{session_id}/events": sid
        | {
            "get": _operation(
                "listEvents",
                "Read committed Events as a page, or follow them as SSE",
                {
                    "200": {
                        "description": "A Page; or, with `Accept: text/event-stream`, a stream of "
                        "`id: <sequence>` / `event: <kind>` / `data: <Event JSON>` frames, plus "
                        "id-less `model_delta` frames and keep-alive comments.",
                        "headers": {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}},
                        "content": {
                            **_json(_ref("Page")),
                            "text/event-stream": {"schema": {"type": "string"}},
                        },
                    },
                    **_errors(READ_ERRORS),
                },
            )
            | {
                "parameters": [
                    {
                        "name": "after",
                        "in": "query",
                        "required": False,
                        "description": "Exclusive cursor: Events with a greater sequence.",
                        "schema": {
                            "type": "integer",
                            "minimum": 0,
                            "maximum": MAX_SEQUENCE,
                            "default": 0,
                        },
                    },
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": 1000,
                            "default": 1000,
                        },
                    },
                    {"$ref": "#/components/parameters/LastEventId"},
                ]
            },
        },
        "/v1/sessions/{session_id}/transcript": sid
        | {
            "get": _operation(
                "getTranscript",
                "Read the canonical transcript (never activates)",
                {**_ok("The transcript", "Transcript"), **_errors(READ_ERRORS)},
            ),
        },
        "/v1/sessions/{session_id}/cancel": sid
        | {
            "post": _operation(
                "cancelTurn",
                "Request cancellation of the running turn",
                {
                    **_ok("Nothing was running (sequence null)", "CancelAnswer"),
                    **_ok("Cancellation recorded", "CancelAnswer", 202),
                    **_errors(WRITE_ERRORS),
                },
                ("IdempotencyKey",),
                _empty_body(),
            ),
        },
        "/v1/sessions/{session_id}/end": sid
        | {
            "post": _operation(
                "endSession",
                "End the session (waits for active work)",
                {**_ok("The ended session", "Session"), **_errors(WRITE_ERRORS)},
                ("IdempotencyKey",),
                _empty_body(),
            ),
        },
        "/v1/sessions/{session_id}/tokens": sid
        | {
            "post": _operation(
                "issueToken",
                "Issue a bearer token good for this session alone",
                {
                    **_ok("The new token (shown once)", "Token", 201),
                    **_errors((400, 401, 403, 404, 413, 415, 500)),
                },
                body=_empty_body(),
            ),
        },
        "/v1/host/poll": {
            "post": _operation(
                "pollHostCalls",
                "Take calls for the host Tools and Environments this host serves (long poll)",
                {**_ok("Calls and cancel notices; empty after wait_secs", "HostPollAnswer"),
                 **_errors((400, 401, 413, 415, 500))},
                body=_json_body("HostPollBody", True, "64 KiB"),
            ),
        },
        "/v1/host/calls/{call_id}": {
            "parameters": [{"name": "call_id", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "post": _operation(
                "answerHostCall",
                "Answer one call this host took, once",
                {**_ok("Taken", "Accepted"), **_errors((400, 401, 404, 409, 413, 415, 500))},
                body=_json_body("HostAnswerBody", True, "8 MiB"),
            ),
        },
        "/healthz": {
            "get": _operation(
                "health",
                "Liveness",
                _ok("Alive", "Probe"),
                public=True,
            )
        },
        "/readyz": {
            "get": _operation(
                "ready",
                "Readiness: the actor system answers",
                {
                    **_ok("Ready", "Probe"),
                    "503": {"description": "Not ready", "content": _json(_ref("Probe"))},
                },
                public=True,
            )
        },
        "/metrics": {
            "get": _operation(
                "metrics",
                "Metrics in the Prometheus text format",
                {
                    "200": {
                        "description": "Metrics",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **_errors((401, 403, 500)),
                },
            )
        },
        "/openapi.json": {
            "get": _operation(
                "openapi",
                "This document",
                {
                    "200": {
                        "description": "OpenAPI document",
                        "content": _json({"type": "object"}),
                    },
                    **_errors((401, 403, 500)),
                },
            )
        },
    }


def openapi_document(config: BrainConfig | None = None) -> dict[str, Any]:
    """The OpenAPI document; with `config`, create-body names are limited to configured ones."""
    responses = {
        f"E{status}": {"description": meaning, "content": _json(_ref("Error"))}
        for status, meaning in ERROR_MEANINGS.items()
    }
    responses["E401"]["headers"] = {
        "WWW-Authenticate": {"description": "`Bearer`", "schema": {"type": "string"}},
    }
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Brain",
            "version": API_VERSION,
            "description": "Durable, journaled sessions for AI agents. See docs/http-api.md.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": _paths(),
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The operator token, or a session token from POST tokens.",
                },
            },
            "schemas": _schemas(config),
            "parameters": _parameters(),
            "headers": _headers(),
            "responses": responses,
        },
    }


HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def documented_routes(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }


def served_routes(app: falcon.App) -> set[tuple[str, str]]:
    """(METHOD, path) the app answers with a responder of its own (not Falcon's defaults)."""
    return {
        (method.method, route.path)
        for route in falcon.inspect.inspect_routes(app)
        for method in route.methods
        if not method.internal
    }


def check_routes(app: falcon.App, document: dict[str, Any] | None = None) -> list[str]:
    """Mismatches between the document and the app's routes, one readable line each."""
    documented = documented_routes(document or openapi_document())
    served = served_routes(app)
    return sorted(
        [f"served but not documented: {m} {p}" for m, p in served - documented]
        + [f"documented but not served: {m} {p}" for m, p in documented - served]
    )


class OpenApiResource:
    """GET /openapi.json: the document, rendered once (it never changes while serving)."""

    def __init__(self, config: BrainConfig | None = None) -> None:
        self._body = json.dumps(openapi_document(config), separators=(",", ":"))

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = falcon.MEDIA_JSON
        resp.text = self._body
