"""A client of one Brain server's sessions: connections, lifetime and session handles.

`Brain` (brain/client/client.py) is this plus serving `host` Tools and Environments. A running
HostServer (brain/client/host.py) needs a client for three things: connections of its own, to
be forgotten when it stops, and to hand its handlers (`call.brain`) so they can drive other
sessions. All three are here (and in client_base.py, shared with AsyncBrain), below both, so the
host module imports this one and the Brain module imports both: neither imports the other.

A client owns its connections and the parts started from it (host servers). Closing it releases
them (a part is stopped at once, its running handlers see their signal fire) and makes every
later operation on it, its Session handles and its streams raise ClientClosed; it sends nothing
about sessions, so they keep running, and hosted work accepted before the close still
completes. `with_token` builds a sibling client with its own connections and lifetime, so an
owner can hand a session token to code that may close its client without affecting the owner.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Self, Unpack

from brain.client import routes
from brain.client.api import Api
from brain.client.client_base import ClientBase
from brain.client.routes import CreateFields
from brain.client.session import Session
from brain.client.transport import Transport


class SessionsClient(ClientBase[Api, Session]):
    transport_class = Transport
    api_class = Api
    session_class = Session

    # --- lifetime ---------------------------------------------------------------------------

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

    # --- sessions ---------------------------------------------------------------------------

    def create_session(self, *, idempotency_key: str | None = None,
                       **fields: Unpack[CreateFields]) -> Session:
        """POST /v1/sessions with `agentloop`, `model`, `tools`, `environments`, `transcript`,
        `idle_ttl_ms`, `metadata` (routes.CreateFields); every one left None takes the server's
        default. The body holds only configured names, so a retry with the same key sends the
        same body."""
        return self._handle(self._api.run(routes.create_session(fields, idempotency_key)))

    def session(self, session_id: str, *, fetch: bool = True) -> Session:
        """A handle for an existing session, read from the server unless `fetch=False`."""
        self._api.check_open()
        handle = Session(self._api, session_id)
        return handle.refresh() if fetch else handle

    def sessions(self, status: str | None = None, limit: int | None = None) -> Iterator[Session]:
        """Every session, newest first, following `next_cursor`; `limit` is the page size."""
        self._api.check_open()
        return self._iter_sessions(status, limit)

    def _iter_sessions(self, status: str | None, limit: int | None) -> Iterator[Session]:
        cursor = None
        while True:
            page = self._api.run(routes.list_sessions(status, limit, cursor))
            yield from map(self._handle, page["sessions"])
            cursor = page.get("next_cursor")
            if not cursor:
                return
