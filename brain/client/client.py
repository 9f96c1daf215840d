"""The entry point: `Brain(base_url, token)`, one client per bearer token.

A Brain is a SessionsClient (brain/client/sessions_client.py: connections, lifetime, sessions,
`with_token`) that can also serve `host` Tools and Environments from this process. The host
servers it starts are its parts: closing the client stops them (host handlers still running see
their signal fire) along with its connections; it sends nothing about sessions, so they keep
running, and hosted work accepted before the close still completes.
"""

from __future__ import annotations

from typing import Any

from brain.client.host import HostServer, ToolHandler
from brain.client.sessions_client import SessionsClient


class Brain(SessionsClient):
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
        self._own(host)
        return host.start()
