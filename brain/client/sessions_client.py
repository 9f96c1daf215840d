"""A client of one Brain server's sessions: connections, lifetime and session handles.

`Brain` (brain/client/client.py) is this plus serving `host` Tools and Environments. A running
HostServer (brain/client/host.py) needs a client for three things: connections of its own, to
be forgotten when it stops, and to hand its handlers (`call.brain`) so they can drive other
sessions. All three are here, below both, so the host module imports this one and the Brain
module imports both: neither of the two imports the other.

A client owns its connections and the parts started from it (host servers). Closing it releases
them (a part is stopped at once, its running handlers see their signal fire) and makes every
later operation on it, its Session handles and its streams raise ClientClosed; it sends nothing
about sessions, so they keep running, and hosted work accepted before the close still
completes. `with_token` builds a sibling client with its own connections and lifetime, so an
owner can hand a session token to code that may close its client without affecting the owner.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any, Protocol, Self

from brain import __version__
from brain.client.api import Api
from brain.client.session import Session
from brain.client.transport import Timeouts, Transport


def session_body(**fields: Any) -> dict[str, Any]:
    """A create_session body: the arguments left None are omitted (the server's defaults)."""
    return {name: value for name, value in fields.items() if value is not None}


class Part(Protocol):
    """Something started from a client that the client stops when it closes."""

    def stop(self, timeout: float = ...) -> bool: ...


class SessionsClient:
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
                         "User-Agent": f"brain-python/{__version__}"}
        self._timeouts = Timeouts(connect=connect_timeout, request=timeout, turn=turn_timeout,
                                  stream=stream_timeout)
        self._api = Api(self._new_transport(max_idle_connections))
        self._parts: list[Part] = []

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<{type(self).__name__} {self.base_url} {state}>"  # never the token

    # --- lifetime ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._api.closed

    def close(self) -> None:
        """Release connections and stop host servers; idempotent. Never interrupts, ends or
        deletes a session. Running host handlers see their signal fire; close does not wait."""
        parts, self._parts = self._parts, []
        for part in parts:
            part.stop(timeout=0)
        self._api.transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def with_token(self, token: str) -> Self:
        """A new client for the same server and options, with its own connections and lifetime."""
        self._api.check_open()
        return type(self)(self.base_url, token, **self._options)

    # --- sessions ---------------------------------------------------------------------------

    def create_session(self, *, agentloop: str | None = None, model: str | None = None,
                       tools: list[str] | None = None, environments: list[str] | None = None,
                       transcript: list[dict[str, Any]] | None = None,
                       idle_ttl_ms: int | None = None, metadata: dict[str, Any] | None = None,
                       idempotency_key: str | None = None) -> Session:
        """POST /v1/sessions; every argument left None takes the server's default.

        The body holds only configured names, so retrying with the same key sends the same body.
        """
        body = session_body(agentloop=agentloop, model=model, tools=tools,
                            environments=environments, transcript=transcript,
                            idle_ttl_ms=idle_ttl_ms, metadata=metadata)
        state = self._api.call("POST", "/v1/sessions", body=body,
                               idempotency_key=idempotency_key).json()
        return Session(self._api, state["id"], state)

    def session(self, session_id: str, *, fetch: bool = True) -> Session:
        """A handle for an existing session, read from the server unless `fetch=False`."""
        handle = Session(self._api, session_id)
        if fetch:
            handle.refresh()
        else:
            self._api.check_open()
        return handle

    def sessions(self, status: str | None = None, limit: int | None = None) -> Iterator[Session]:
        """Every session, newest first, following `next_cursor`; `limit` is the page size."""
        self._api.check_open()
        return self._iter_sessions(status, limit)

    def _iter_sessions(self, status: str | None, limit: int | None) -> Iterator[Session]:
        cursor = None
        while True:
            page = self._api.call("GET", "/v1/sessions",
                                  query={"status": status, "limit": limit, "cursor": cursor}).json()
            for state in page["sessions"]:
                yield Session(self._api, state["id"], state)
            cursor = page.get("next_cursor")
            if not cursor:
                return

    # --- parts: what a host server takes from its client ------------------------------------

    def _new_transport(self, max_idle: int) -> Transport:
        """Connections of this client's server, token and timeouts, with a lifetime of their own."""
        return Transport(self.base_url, self._headers, self._timeouts, max_idle=max_idle,
                         ssl_context=self._options["ssl_context"])

    def _own(self, part: Part) -> None:
        """Stop `part` when this client closes."""
        self._parts.append(part)

    def _disown(self, part: Part) -> None:
        """`part` stopped by itself: the client's close has nothing left to stop in it."""
        if part in self._parts:
            self._parts.remove(part)
