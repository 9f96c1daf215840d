"""The entry point: `Brain(base_url, token)`, one client per bearer token.

A client owns its connections and the host servers it started. Closing it releases them (host
handlers still running see their signal fire) and makes every later operation on it, its
Session handles and its streams raise ClientClosed; it sends nothing about sessions, so they
keep running, and hosted work accepted before the close still completes. `with_token` builds a
sibling client with its own connections and lifetime, so an owner can hand a session token to
code that may close its client without affecting the owner.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

from brain import __version__
from brain.client.api import Api
from brain.client.host import HostServer, ToolHandler
from brain.client.session import Session
from brain.client.transport import Timeouts, Transport


class Brain:
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
        self._hosts: list[HostServer] = []

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<Brain {self.base_url} {state}>"  # never the token

    # --- lifetime ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._api.closed

    def close(self) -> None:
        """Release connections and stop host servers; idempotent. Never interrupts, ends or
        deletes a session. Running host handlers see their signal fire; close does not wait."""
        hosts, self._hosts = self._hosts, []
        for host in hosts:
            host.stop(timeout=0)
        self._api.transport.close()

    def __enter__(self) -> Brain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def with_token(self, token: str) -> Brain:
        """A new client for the same server and options, with its own connections and lifetime."""
        self._api.check_open()
        return Brain(self.base_url, token, **self._options)

    # --- sessions ---------------------------------------------------------------------------

    def create_session(self, *, agentloop: str | None = None, model: str | None = None,
                       tools: list[str] | None = None, environments: list[str] | None = None,
                       transcript: list[dict[str, Any]] | None = None,
                       idle_ttl_ms: int | None = None, metadata: dict[str, Any] | None = None,
                       idempotency_key: str | None = None) -> Session:
        """POST /v1/sessions; every argument left None takes the server's default.

        The body holds only configured names, so retrying with the same key sends the same body.
        """
        fields = {"agentloop": agentloop, "model": model, "tools": tools,
                  "environments": environments, "transcript": transcript,
                  "idle_ttl_ms": idle_ttl_ms, "metadata": metadata}
        body = {name: value for name, value in fields.items() if value is not None}
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

    # --- host Tools and Environments --------------------------------------------------------

    def serve_host(self, tools: dict[str, ToolHandler] | None = None,
                   environments: dict[str, Any] | None = None, *, wait_secs: float = 25.0,
                   max_concurrency: int = 16) -> HostServer:
        """Serve `host` Tools and Environments from this process until stop() or close().

        `tools` maps configured host Tool names to `handler(call) -> content` (or `{content,
        is_error, events}`); `environments` maps configured host Environment names to objects
        with `setup() detach() teardown() exec(request) read(request) write(request)`.
        Polling runs on a background thread with its own connections (docs/host-tools.md).
        """
        self._api.check_open()
        host = HostServer(self, tools, environments, wait_secs=wait_secs,
                          max_concurrency=max_concurrency)
        self._hosts.append(host)
        return host.start()

    def _host_stopped(self, host: HostServer) -> None:
        if host in self._hosts:
            self._hosts.remove(host)

    # --- plumbing ---------------------------------------------------------------------------

    def _new_transport(self, max_idle: int) -> Transport:
        """Connections of this client's server, token and timeouts, with a lifetime of their own."""
        return Transport(self.base_url, self._headers, self._timeouts, max_idle=max_idle,
                         ssl_context=self._options["ssl_context"])

