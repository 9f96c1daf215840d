"""What `Brain` and `AsyncBrain` share apart from I/O: options, headers, handles and parts.

Both clients are built from the same options into the same pieces: a transport of their kind
(stdlib for the sync client, httpx for the asyncio one), an Api shell over it, and the session
handles it makes. Only the class of each differs, so each client names its classes and this one
builds them; `with_token` and the host servers' own connections go through the same path.
"""

from __future__ import annotations

import ssl
from typing import Any, ClassVar, Generic, Self, TypeVar

from brain.client.routes import Timeouts
from brain.client.shadowing import brain_version

ApiT = TypeVar("ApiT")
HandleT = TypeVar("HandleT")


class ClientBase(Generic[ApiT, HandleT]):
    """Options, connections, handles and parts of one client of one Brain server."""

    transport_class: ClassVar[Any]
    api_class: ClassVar[Any]
    session_class: ClassVar[Any]
    user_agent: ClassVar[str] = f"brain-python/{brain_version()}"

    def __init__(self, base_url: str, token: str, *, timeout: float = 90.0,
                 connect_timeout: float = 10.0, turn_timeout: float = 1920.0,
                 stream_timeout: float = 45.0, max_idle_connections: int = 4,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        """`timeout` bounds ordinary socket operations, `turn_timeout` those of send, end and
        delete (which wait for a turn or teardown), `stream_timeout` the silence tolerated on an
        SSE stream before reconnecting; see Timeouts."""
        self.base_url = base_url.rstrip("/")
        self._options: dict[str, Any] = {
            "timeout": timeout, "connect_timeout": connect_timeout,
            "turn_timeout": turn_timeout, "stream_timeout": stream_timeout,
            "max_idle_connections": max_idle_connections, "ssl_context": ssl_context,
        }
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json",
                         "User-Agent": self.user_agent}
        self._timeouts = Timeouts(connect=connect_timeout, request=timeout, turn=turn_timeout,
                                  stream=stream_timeout)
        self._api: ApiT = self.api_class(self._new_transport(max_idle_connections))
        self._parts: list[Any] = []

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<{type(self).__name__} {self.base_url} {state}>"  # never the token

    @property
    def closed(self) -> bool:
        return self._api.closed  # type: ignore[attr-defined]

    def with_token(self, token: str) -> Self:
        """A new client for the same server and options, with its own connections and lifetime."""
        self._api.check_open()  # type: ignore[attr-defined]
        return type(self)(self.base_url, token, **self._options)

    def _handle(self, state: dict[str, Any]) -> HandleT:
        """The session handle for a Session representation the server answered."""
        return self.session_class(self._api, state["id"], state)

    # --- parts: what a host server takes from its client ------------------------------------

    def _new_transport(self, max_idle: int) -> Any:
        """Connections of this client's server, token and timeouts, with a lifetime of their own."""
        return self.transport_class(self.base_url, self._headers, self._timeouts,
                                    max_idle=max_idle, ssl_context=self._options["ssl_context"])

    def _own(self, part: Any) -> None:
        """Stop `part` when this client closes."""
        self._parts.append(part)

    def _disown(self, part: Any) -> None:
        """`part` stopped by itself: the client's close has nothing left to stop in it."""
        if part in self._parts:
            self._parts.remove(part)
