"""The API object a client and its Session handles share: one transport, one way to call.

A `Brain` owns it; every Session made by that client holds the same object. Requests, the
open check, live streams and the turn timeout all go through it, so a handle never reaches into
its client's private parts, and closing the client (which closes this transport) makes every
handle and stream raise ClientClosed at once.
"""

from __future__ import annotations

import json
from typing import Any, Generic, Protocol, TypeVar

from brain.client.errors import api_error
from brain.client.keys import check_idempotency_key
from brain.client.stream import EventStream
from brain.client.transport import Response, Timeouts, Transport


class TransportLike(Protocol):
    """What ApiBase uses of a transport (brain/client/transport.py or async_api.py's)."""

    timeouts: Timeouts

    @property
    def closed(self) -> bool: ...

    def check_open(self) -> None: ...


TransportT = TypeVar("TransportT", bound=TransportLike)

NO_BODY: Any = object()
"""Marks a request without a JSON body (`None` is the JSON body `null`)."""


def encode_request(body: Any, headers: dict[str, str] | None,
                   idempotency_key: str | None) -> tuple[bytes | None, dict[str, str]]:
    """The body bytes and headers of a request (shared by the sync and asyncio clients)."""
    all_headers = dict(headers or {})
    data = None
    if body is not NO_BODY:
        data = json.dumps(body, allow_nan=False, separators=(",", ":")).encode()
        all_headers["Content-Type"] = "application/json"
    if idempotency_key is not None:
        all_headers["Idempotency-Key"] = check_idempotency_key(idempotency_key)
    return data, all_headers


def checked(answer: Response) -> Response:
    """`answer` when it is 2xx; otherwise raise the matching BrainAPIError."""
    if not 200 <= answer.status < 300:
        raise api_error(answer.status, answer.body, answer.headers)
    return answer


class ApiBase(Generic[TransportT]):
    """What the sync `Api` and the asyncio `AsyncApi` share: the transport and its state."""

    def __init__(self, transport: TransportT) -> None:
        self.transport = transport

    @property
    def closed(self) -> bool:
        return self.transport.closed

    @property
    def turn_timeout(self) -> float:
        """The socket timeout of requests that wait for a turn or a teardown."""
        return self.transport.timeouts.turn

    def check_open(self) -> None:
        """Raise ClientClosed once the owning client was closed."""
        self.transport.check_open()


class Api(ApiBase[Transport]):
    """The sync client's: blocking calls and streams over its Transport."""

    def call(self, method: str, path: str, *, query: dict[str, Any] | None = None,
             body: Any = NO_BODY, headers: dict[str, str] | None = None,
             idempotency_key: str | None = None, timeout: float | None = None) -> Response:
        """One request; any non-2xx answer raises the matching BrainAPIError."""
        data, all_headers = encode_request(body, headers, idempotency_key)
        answer = self.transport.request(method, path, query=query, body=data,
                                        headers=all_headers, timeout=timeout)
        return checked(answer)

    def events(self, path: str, *, after: int, **options: Any) -> EventStream:
        """A live Event stream of `path` (SSE) after `after`; `connect()` subscribes it."""
        self.check_open()
        return EventStream(self.transport, path, after=after, **options)
