"""A session's credentials for its MCP servers: checked at create, held in memory only.

They arrive in the create body's `mcp_credentials` and go straight to the Tool executor, which
keeps them in a dict for as long as it lives. They are never part of a message that is logged
or traced by content, never in `session_created`, never on disk: a reader of the data dir, the
log or the traces finds none. The price is that a restarted Tool executor has forgotten them;
a call that needs them then fails with a clear `error` (nothing was sent) naming the server, and
the session's other Tools are unaffected. Deleting or ending the session forgets them at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from brain.errors import InvalidRequest
from brain.tools.mcp.servers import transport_of

CREDENTIAL_FIELDS = {"http": ("bearer_token", "headers"), "stdio": ("env",)}


@dataclass(frozen=True)
class Credentials:
    """One server's credentials for one session. `repr` shows only which kinds are present."""

    bearer_token: str | None = field(default=None, repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def http_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.bearer_token is not None:
            headers["Authorization"] = f"Bearer {self.bearer_token}"
        return headers

    def __repr__(self) -> str:
        kinds = [k for k in ("bearer_token", "headers", "env") if getattr(self, k)]
        return f"Credentials(<{', '.join(kinds) or 'none'} withheld>)"


def parse_credentials(given: Any, servers: dict[str, dict[str, Any]]) -> dict[str, Credentials]:
    """The create body's `mcp_credentials`, checked against the servers the session names.

    Raises InvalidRequest naming the server and field; the message never quotes a value.
    """
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise InvalidRequest("mcp_credentials: expected an object keyed by server name")
    parsed = {}
    for server, entry in given.items():
        where = f"mcp_credentials.{server}"
        if server not in servers:
            raise InvalidRequest(f"{where}: the session does not name this server in mcp_servers")
        allowed = CREDENTIAL_FIELDS[transport_of(servers[server])]
        if not isinstance(entry, dict) or not entry:
            raise InvalidRequest(f"{where}: expected an object with one of {', '.join(allowed)}")
        for key in entry:
            if key not in allowed:
                raise InvalidRequest(f"{where}: {key} does not apply to this server's transport "
                                     f"(one of {', '.join(allowed)})")
        token = entry.get("bearer_token")
        if token is not None and (not isinstance(token, str) or not token
                                  or not token.isprintable()):
            raise InvalidRequest(f"{where}.bearer_token: expected a non-empty printable string")
        parsed[server] = Credentials(
            bearer_token=token,
            headers=_pairs(entry.get("headers"), f"{where}.headers"),
            env=_pairs(entry.get("env"), f"{where}.env"))
    return parsed


def _pairs(table: Any, where: str) -> tuple[tuple[str, str], ...]:
    if table is None:
        return ()
    if not isinstance(table, dict) or not all(
            isinstance(k, str) and k and isinstance(v, str) and v.isprintable()
            for k, v in table.items()):
        raise InvalidRequest(f"{where}: expected an object of printable strings")
    return tuple(sorted(table.items()))


class CredentialStore:
    """session id → server name → Credentials, in this process's memory and nowhere else."""

    def __init__(self) -> None:
        self._held: dict[str, dict[str, Credentials]] = {}
        self._lock = threading.Lock()

    def hold(self, session_id: str, credentials: dict[str, Credentials]) -> None:
        with self._lock:
            if credentials:
                self._held[session_id] = dict(credentials)

    def get(self, session_id: str, server: str) -> Credentials | None:
        with self._lock:
            return self._held.get(session_id, {}).get(server)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._held.pop(session_id, None)
