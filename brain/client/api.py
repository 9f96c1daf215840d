"""The sync shell: carries out the core's Calls (brain/client/routes.py) over the stdlib Transport.

A `Brain` owns one Api; every Session made by that client holds the same object. Requests, the
open check and live streams all go through it, so a handle never reaches into its client's
private parts, and closing the client (which closes this transport) makes every handle and
stream raise ClientClosed at once. The asyncio shell (brain/client/async_api.py) is the same
over httpx: only `run` differs, by an `await`.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

from brain.client.routes import Call, Timeouts
from brain.client.stream import EventStream
from brain.client.transport import Transport

T = TypeVar("T")


class TransportLike(Protocol):
    """What ApiBase uses of a transport (brain/client/transport.py or async_api.py's)."""

    timeouts: Timeouts

    @property
    def closed(self) -> bool: ...

    def check_open(self) -> None: ...


TransportT = TypeVar("TransportT", bound=TransportLike)


class ApiBase(Generic[TransportT]):
    """What the sync `Api` and the asyncio `AsyncApi` share: the transport and its state."""

    def __init__(self, transport: TransportT) -> None:
        self.transport = transport

    @property
    def closed(self) -> bool:
        return self.transport.closed

    def check_open(self) -> None:
        """Raise ClientClosed once the owning client was closed."""
        self.transport.check_open()


class Api(ApiBase[Transport]):
    """The sync client's: blocking calls and streams over its Transport."""

    def run(self, call: Call[T]) -> T:
        """Carry out `call`; any non-2xx answer raises the matching BrainAPIError."""
        data, headers = call.encode()
        answer = self.transport.request(call.method, call.path, query=call.query, body=data,
                                        headers=headers,
                                        timeout=call.seconds(self.transport.timeouts))
        return call.answer(answer)

    def events(self, path: str, *, after: int, **options: Any) -> EventStream:
        """A live Event stream of `path` (SSE) after `after`; `connect()` subscribes it."""
        self.check_open()
        return EventStream(self.transport, path, after=after, **options)
