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

from brain import errors
from brain.actors.messages import HOST_DISPATCHER_GLOBAL_NAME, HostAnswer, HostPoll, Reply
from brain.config import BrainConfig
from brain.host import DEFAULT_CALLS_PER_POLL, DEFAULT_WAIT_SECS, MAX_CALLS_PER_POLL, MAX_WAIT_SECS
from brain.web.bodies import SMALL_BODY_LIMIT, read_json_object
from brain.web.gateway import ActorGateway, reply_body

POLL_MARGIN_SECS = 5.0  # the dispatcher answers by wait_secs; the ask may take this much longer
ANSWER_TIMEOUT_SECS = 10.0
ANSWER_BODY_LIMIT = 8 << 20  # an environment read's result may hold 1 MiB of escaped text
POLL_FIELDS = frozenset({"tools", "environments", "wait_secs", "max_calls", "host_id"})
HOST_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
CALL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}-[0-9]{1,19}$")


def _names(body: dict[str, Any], field: str, configured: dict[str, dict[str, Any]],
           key: str) -> tuple[str, ...]:
    """The names of `field`, each a configured part whose `key` is "host"."""
    value = body.get(field, [])
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise errors.InvalidRequest(f"{field}: expected a list of names")
    for name in value:
        if configured.get(name, {}).get(key) != "host":
            raise errors.InvalidRequest(f"{field}: {name!r} is not a configured host {field[:-1]}")
    if len(set(value)) != len(value):
        raise errors.InvalidRequest(f"{field}: names must not repeat")
    return tuple(value)


def _number(body: dict[str, Any], field: str, default: float, low: float, high: float,
            *, integer: bool = False) -> float:
    value = body.get(field, default)
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
        kind = "an integer" if integer else "a number"
        raise errors.InvalidRequest(f"{field}: {kind} from {low:g} to {high:g}")
    return value


def parse_poll(body: dict[str, Any], config: BrainConfig, scope: str | None) -> HostPoll:
    """The poll body as the dispatcher's message; 400 for anything it cannot serve."""
    unknown = set(body) - POLL_FIELDS
    if unknown:
        raise errors.InvalidRequest(f"unknown field: {sorted(unknown)[0]}")
    tools = _names(body, "tools", config.tools, "route")
    environments = _names(body, "environments", config.environments, "kind")
    if not tools and not environments:
        raise errors.InvalidRequest("name at least one host tool or environment to serve")
    host_id = body.get("host_id")
    if host_id is not None and (not isinstance(host_id, str) or not HOST_ID.match(host_id)):
        raise errors.InvalidRequest("host_id: 1-64 characters of A-Z a-z 0-9 _ . : -")
    return HostPoll(
        request_id=uuid.uuid4().hex,
        tools=tools,
        environments=environments,
        scope=scope,
        host_id=host_id,
        max_calls=int(_number(body, "max_calls", DEFAULT_CALLS_PER_POLL, 0, MAX_CALLS_PER_POLL,
                              integer=True)),
        wait_secs=float(_number(body, "wait_secs", DEFAULT_WAIT_SECS, 0, MAX_WAIT_SECS)),
    )


def _ask(gateway: ActorGateway, message: Any, timeout: float) -> dict[str, Any]:
    from brain.actors.host_dispatcher import HostDispatcher

    reply = gateway.ask_global(HOST_DISPATCHER_GLOBAL_NAME, HostDispatcher, message, timeout)
    if not isinstance(reply, Reply):
        raise errors.Internal("the host dispatcher did not answer in time")
    return reply_body(reply)


class HostPollResource:
    scopes_itself = True  # AuthMiddleware lets session tokens in; the dispatcher filters calls

    def __init__(self, config: BrainConfig, gateway: ActorGateway) -> None:
        self.config = config
        self.gateway = gateway

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json_object(req, SMALL_BODY_LIMIT)
        poll = parse_poll(body, self.config, req.context.get("session_scope"))
        resp.media = _ask(self.gateway, poll, poll.wait_secs + POLL_MARGIN_SECS)


class HostCallResource:
    scopes_itself = True

    def __init__(self, gateway: ActorGateway) -> None:
        self.gateway = gateway

    def on_post(self, req: falcon.Request, resp: falcon.Response, call_id: str) -> None:
        if not CALL_ID.match(call_id):
            raise errors.NotFound("no such host call is waiting for an answer")
        body = read_json_object(req, ANSWER_BODY_LIMIT)
        answer = HostAnswer(uuid.uuid4().hex, call_id, req.context.get("session_scope"), body)
        resp.media = _ask(self.gateway, answer, ANSWER_TIMEOUT_SECS)
