"""POST /v1/host/poll and POST /v1/host/calls/{call_id}: how host processes serve calls.

A host long-polls for the calls of the `host` Tools and Environments it serves and answers each
one once. Both routes only check the request and ask the HostDispatcher actor, which holds every
pending call (docs/host-tools.md). A session token may poll and answer, but only ever sees its
own session's calls; the operator token serves every session.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import falcon

from brain import errors, request_context
from brain.config import BrainConfig
from brain.host import DEFAULT_CALLS_PER_POLL, DEFAULT_WAIT_SECS, MAX_CALLS_PER_POLL, MAX_WAIT_SECS
from brain.protocol.host_calls import HostAnswer, HostPoll
from brain.protocol.messages import HOST_DISPATCHER_GLOBAL_NAME, Reply
from brain.web.contract import SESSION_ID_PATTERN, Answer, operation
from brain.web.gateway import ActorGateway, reply_body
from brain.web.schema import Schema, nullable
from brain.web.shapes import SEQUENCE, SESSION_ID_STRING

POLL_MARGIN_SECS = 5.0  # the dispatcher answers by wait_secs; the ask may take this much longer
ANSWER_TIMEOUT_SECS = 10.0
ANSWER_BODY_LIMIT = 8 << 20  # an environment read's result may hold 1 MiB of escaped text
CALL_ID = re.compile(SESSION_ID_PATTERN.removesuffix("$") + "-[0-9]{1,19}$")  # id-sequence

NAMES = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
HOST_POLL_BODY = Schema("HostPollBody", {
    "type": "object",
    "additionalProperties": False,
    "description": "Names of configured host Tools and Environments this host serves "
    "(at least one in all).",
    "properties": {
        "tools": NAMES,
        "environments": NAMES,
        "wait_secs": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECS,
                      "default": DEFAULT_WAIT_SECS},
        "max_calls": {"type": "integer", "minimum": 0, "maximum": MAX_CALLS_PER_POLL,
                      "default": DEFAULT_CALLS_PER_POLL},
        "host_id": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,64}$",
                    "description": "This host's id: a newer poll with the same id answers its "
                    "waiting predecessor at once, empty."},
    },
    # `{}`, or only empty lists, names nothing to serve: refused with 400, so not a valid body.
    "anyOf": [{"required": [kind], "properties": {kind: {"minItems": 1}}}
              for kind in ("tools", "environments")],
    "x-refusal": "name at least one host tool or environment to serve",
}, "poll body")

HOST_CALL = Schema("HostCall", {
    "type": "object",
    "required": ["call_id", "kind", "name", "session_id", "sequence", "deadline"],
    "properties": {
        "call_id": {"type": "string"},
        "kind": {"type": "string", "enum": ["tool", "environment"]},
        "name": {"type": "string"},
        "session_id": SESSION_ID_STRING,
        "sequence": SEQUENCE,
        "deadline": nullable({"type": "number", "description": "Epoch seconds."}),
        "input": {"description": "A Tool call's input (any JSON)."},
        "op": {"type": "string", "enum": ["setup", "exec", "read", "write", "detach",
                                          "teardown"]},
        "request": {"type": "object"},
    },
}, "host call")

HOST_POLL_ANSWER = Schema("HostPollAnswer", {
    "type": "object",
    "required": ["calls", "cancel"],
    "properties": {
        "calls": {"type": "array", "items": HOST_CALL, "maxItems": MAX_CALLS_PER_POLL},
        "cancel": {"type": "array", "items": {"type": "string"},
                   "description": "Calls handed to this host that Brain cancelled."},
    },
}, "poll answer")

HOST_ANSWER_BODY = Schema("HostAnswerBody", {
    "type": "object",
    "description": "A Tool: `{content, is_error?, events?, outcome?: ok|cancelled}`. "
    "An Environment op: `{result: {...}}` or `{error: {message, outcome?}}`.",
}, "host answer")

ACCEPTED = Schema("Accepted", {
    "type": "object",
    "required": ["accepted"],
    "properties": {"accepted": {"type": "boolean", "enum": [True]}},
}, "acceptance")


def _names(body: dict[str, Any], field: str, configured: dict[str, dict[str, Any]],
           key: str) -> tuple[str, ...]:
    """The names of `field`, each a configured part whose `key` is "host"."""
    value = body.get(field, [])
    for name in value:
        if configured.get(name, {}).get(key) != "host":
            raise errors.InvalidRequest(f"{field}: {name!r} is not a configured host {field[:-1]}")
    return tuple(value)


def parse_poll(body: dict[str, Any], config: BrainConfig, scope: str | None) -> HostPoll:
    """A poll body, already held to HOST_POLL_BODY, as the dispatcher's message; 400 for names
    this server has no host part for."""
    tools = _names(body, "tools", config.tools, "route")
    environments = _names(body, "environments", config.environments, "kind")
    if not tools and not environments:
        raise errors.InvalidRequest("name at least one host tool or environment to serve")
    fields = HOST_POLL_BODY.spec["properties"]
    return HostPoll(
        request_id=request_context.request_id.get() or uuid.uuid4().hex,  # x-request-id
        tools=tools,
        environments=environments,
        scope=scope,
        host_id=body.get("host_id"),
        max_calls=body.get("max_calls", fields["max_calls"]["default"]),
        wait_secs=float(body.get("wait_secs", fields["wait_secs"]["default"])),
    )


def _ask(gateway: ActorGateway, message: Any, timeout: float) -> dict[str, Any]:
    from brain.actors.executors.host_dispatcher import HostDispatcher

    reply = gateway.ask_global(HOST_DISPATCHER_GLOBAL_NAME, HostDispatcher, message, timeout)
    if not isinstance(reply, Reply):
        raise errors.Internal("the host dispatcher did not answer in time")
    return reply_body(reply)


class HostPollResource:
    scopes_itself = True  # AuthMiddleware lets session tokens in; the dispatcher filters calls

    def __init__(self, config: BrainConfig, gateway: ActorGateway) -> None:
        self.config = config
        self.gateway = gateway

    @operation("pollHostCalls",
               "Take calls for the host Tools and Environments this host serves (long poll)",
               {200: Answer("Calls and cancel notices; empty after wait_secs", HOST_POLL_ANSWER)},
               errors=(400, 401, 413, 415, 500), body=HOST_POLL_BODY, body_required=True)
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        poll = parse_poll(req.context.body, self.config, req.context.get("session_scope"))
        resp.media = _ask(self.gateway, poll, poll.wait_secs + POLL_MARGIN_SECS)


class HostCallResource:
    scopes_itself = True

    def __init__(self, gateway: ActorGateway) -> None:
        self.gateway = gateway

    @operation("answerHostCall", "Answer one call this host took, once",
               {200: Answer("Taken", ACCEPTED)}, errors=(400, 401, 404, 409, 413, 415, 500),
               body=HOST_ANSWER_BODY, body_required=True, body_limit=ANSWER_BODY_LIMIT)
    def on_post(self, req: falcon.Request, resp: falcon.Response, call_id: str) -> None:
        if not CALL_ID.match(call_id):
            raise errors.NotFound("no such host call is waiting for an answer")
        body = req.context.body
        answer = HostAnswer(request_context.request_id.get() or uuid.uuid4().hex, call_id,
                            req.context.get("session_scope"), body)
        resp.media = _ask(self.gateway, answer, ANSWER_TIMEOUT_SECS)
