"""Every request the SDK makes, written once as a value: the core both client shells run.

A `Call` says all there is to know about one request before any socket is touched: method,
path, query, JSON body, headers, Idempotency-Key, which timeout bounds it, and how to read a
2xx answer. The sync shell (brain/client/api.py, on the standard library) and the asyncio shell
(brain/client/async_api.py, on httpx) only carry it out, so a route, its timeout or its parser
cannot differ between them. The rule that tells "not sent" from "sent, outcome unknown" after a
failed exchange, and which requests may be sent again, is here too for the same reason.

Nothing here does I/O; every function is pure and can be tested without a server.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar
from urllib.parse import quote

from brain.client.errors import ProtocolError, RequestTimeout, TransportError, api_error
from brain.client.keys import check_idempotency_key
from brain.client.shapes import CancelAnswer, EventPage, Receipt, Transcript, TurnResult

T = TypeVar("T")
TurnInput = str | list[dict[str, Any]]

NO_BODY: Any = object()
"""Marks a request without a JSON body (`None` is the JSON body `null`)."""

REPEATABLE_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class Timeouts:
    """Seconds allowed for each socket operation, by kind of request.

    `request` must exceed the server's own bounds on ordinary operations (submit and cancel wait
    up to 60 s for the session); `turn` covers operations that wait for a whole turn or teardown
    (send, end, delete) and defaults to the server's BRAIN_MAX_TURN_SECS plus its 120 s margin;
    `stream` must exceed the 15 s keep-alive comments of SSE, or an idle stream would reconnect.
    """

    connect: float = 10.0
    request: float = 90.0
    turn: float = 1920.0
    stream: float = 45.0


@dataclass(frozen=True)
class Response:
    """A complete answer; header names are lower-case."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise ProtocolError(f"answer {self.status} is not JSON: {self.body[:200]!r}") from exc


def checked(answer: Response) -> Response:
    """`answer` when it is 2xx; otherwise raise the matching BrainAPIError."""
    if not 200 <= answer.status < 300:
        raise api_error(answer.status, answer.body, answer.headers)
    return answer


def json_object(answer: Response) -> dict[str, Any]:
    """The answer's JSON (the contract's answers are objects)."""
    return answer.json()


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and how to read its 2xx answer; `timeout` is a Timeouts field or seconds."""

    method: str
    path: str
    read: Callable[[Response], T]
    query: Mapping[str, Any] | None = None
    body: Any = NO_BODY
    headers: Mapping[str, str] = field(default_factory=dict)
    idempotency_key: str | None = None
    timeout: str | float = "request"

    def encode(self) -> tuple[bytes | None, dict[str, str]]:
        """The body bytes and headers to send (the key checked before anything is sent)."""
        headers = dict(self.headers)
        data = None
        if self.body is not NO_BODY:
            data = json.dumps(self.body, allow_nan=False, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        if self.idempotency_key is not None:
            headers["Idempotency-Key"] = check_idempotency_key(self.idempotency_key)
        return data, headers

    def seconds(self, timeouts: Timeouts) -> float:
        """The socket timeout of this request under a client's `timeouts`."""
        if isinstance(self.timeout, str):
            return float(getattr(timeouts, self.timeout))
        return self.timeout

    def answer(self, response: Response) -> T:
        """What the caller gets: the parsed answer, or the server's error raised."""
        return self.read(checked(response))


# --- sessions --------------------------------------------------------------------------------

class CreateFields(TypedDict, total=False):
    """The fields of a create-session body the SDK knows; each is a keyword of `create_session`.

    Adding a body field the server gained is one line here: both clients pass every declared
    keyword through to the body (None meaning "omit: the server's default applies").
    """

    agentloop: str | None
    model: str | None
    tools: list[str] | None
    environments: list[str] | None
    transcript: list[dict[str, Any]] | None
    idle_ttl_ms: int | None
    metadata: dict[str, Any] | None
    limits: dict[str, int] | None  # lower turn limits: max_turn_secs, max_model_calls
    mcp_servers: list[str] | None  # configured MCP servers whose tools the session offers
    mcp_credentials: dict[str, dict[str, Any]] | None  # per server; held in memory, never recorded


CREATE_FIELDS = frozenset(CreateFields.__annotations__)


def create_session(fields: Mapping[str, Any], key: str | None) -> Call[dict[str, Any]]:
    """POST /v1/sessions; fields left None are omitted, so a retry sends the same body."""
    unknown = set(fields) - CREATE_FIELDS
    if unknown:
        raise TypeError(f"create_session() got unexpected keyword(s) {sorted(unknown)}")
    body = {name: value for name, value in fields.items() if value is not None}
    return Call("POST", "/v1/sessions", json_object, body=body, idempotency_key=key)


def list_sessions(status: str | None, limit: int | None,
                  cursor: str | None) -> Call[dict[str, Any]]:
    """One page of GET /v1/sessions; its `next_cursor` leads to the next."""
    return Call("GET", "/v1/sessions", json_object,
                query={"status": status, "limit": limit, "cursor": cursor})


def session_path(session_id: str) -> str:
    return f"/v1/sessions/{quote_segment(session_id)}"


def quote_segment(value: str) -> str:
    """A path segment with everything but unreserved characters escaped."""
    return quote(value, safe="")


def get_session(path: str) -> Call[dict[str, Any]]:
    """The Session representation (GET never activates the session)."""
    return Call("GET", path, json_object)


def transcript(path: str) -> Call[Transcript]:
    return Call("GET", path + "/transcript", lambda a: Transcript.from_json(a.json()))


def events_page(path: str, after: int, limit: int | None) -> Call[EventPage]:
    return Call("GET", path + "/events", lambda a: EventPage.from_json(a.json()),
                query={"after": after, "limit": limit})


def message_body(turn_input: TurnInput, limits: dict[str, int] | None) -> dict[str, Any]:
    """A message body: the input, and the turn's own lower limits when asked for."""
    return {"input": turn_input} if limits is None else {"input": turn_input, "limits": limits}


def send(path: str, turn_input: TurnInput, key: str | None, timeout: float | None,
         limits: dict[str, int] | None = None) -> Call[TurnResult]:
    """POST a message and wait for its TurnResult (`timeout` None: the turn timeout)."""
    return Call("POST", path + "/messages", lambda a: TurnResult.from_json(a.json()),
                body=message_body(turn_input, limits), idempotency_key=key,
                timeout="turn" if timeout is None else timeout)


def submit(path: str, turn_input: TurnInput, key: str,
           limits: dict[str, int] | None = None) -> Call[Receipt]:
    """POST a message with `Prefer: respond-async`: the receipt of the durable turn."""
    return Call("POST", path + "/messages", lambda a: Receipt.from_json(a.json()),
                body=message_body(turn_input, limits), headers={"Prefer": "respond-async"},
                idempotency_key=key)


def cancel(path: str, key: str | None) -> Call[CancelAnswer]:
    return Call("POST", path + "/cancel", lambda a: CancelAnswer.from_json(a.json()),
                idempotency_key=key)


def end(path: str, key: str | None, timeout: float | None) -> Call[dict[str, Any]]:
    """POST end: waits for active work, answers the ended Session."""
    return Call("POST", path + "/end", json_object, idempotency_key=key,
                timeout="turn" if timeout is None else timeout)


def delete(path: str, key: str | None) -> Call[None]:
    """DELETE waits for the Environments' teardown: the turn timeout bounds it."""
    return Call("DELETE", path, lambda a: None, idempotency_key=key, timeout="turn")


def create_token(path: str) -> Call[str]:
    return Call("POST", path + "/tokens", lambda a: a.json()["token"])


def fork(path: str, at_sequence: int, key: str | None) -> Call[dict[str, Any]]:
    return Call("POST", path + "/forks", json_object, body={"at_sequence": at_sequence},
                idempotency_key=key)


# --- host Tools and Environments -------------------------------------------------------------

def host_object(answer: Response) -> dict[str, Any]:
    value = answer.json()
    return value if isinstance(value, dict) else {}


def host_poll(body: dict[str, Any], timeout: float) -> Call[dict[str, Any]]:
    return Call("POST", "/v1/host/poll", host_object, body=body, timeout=timeout)


def host_answer(call_id: str, body: dict[str, Any], timeout: float) -> Call[dict[str, Any]]:
    return Call("POST", f"/v1/host/calls/{quote_segment(call_id)}", host_object, body=body,
                timeout=timeout)


# --- failed exchanges ------------------------------------------------------------------------

def may_resend(method: str, headers: Mapping[str, str]) -> bool:
    """Whether a request whose kept-alive connection broke may be sent once more: a GET, or a
    keyed request (the server then replays or refuses the duplicate). Nothing else, ever."""
    return method in REPEATABLE_METHODS or headers.get("Idempotency-Key") is not None


def lost(what: str, *, phase: str, timed_out: bool, wait: float, key: str | None,
         cause: BaseException) -> TransportError:
    """The SDK's exception for an exchange that failed in `phase` (connect, send or answer).

    A failure while connecting means the request certainly never left: `maybe_applied` False.
    Anything later may have reached the server: `maybe_applied` True, with the key it carried.
    """
    sent = phase != "connect"
    if timed_out:
        return RequestTimeout(f"{what}: no answer within {wait} s (during {phase})",
                              maybe_applied=sent, idempotency_key=key)
    return TransportError(f"{what}: connection failed during {phase}: {cause!r}",
                          maybe_applied=sent, idempotency_key=key)
