"""A create body's MCP fields, and the Tool entries a server's listing becomes.

`mcp_servers` names configured servers; `mcp_credentials` carries the session's own credentials
for some of them (credentials.py). At creation each server's `tools/list` is fetched once and
each offered tool (narrowed by the operator's allow-list) becomes one entry of the session's
`tools`, named `server.tool`, holding what the model is shown (description, input schema,
annotations) and what a call needs (the server's table, and whether credentials were given).
`session_created` records them, so every turn, and every replay, sees the same tools.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from brain.errors import InvalidRequest
from brain.tools.mcp.credentials import Credentials, parse_credentials
from brain.tools.mcp.servers import NAME

CREATE_FIELDS = {"mcp_servers": list, "mcp_credentials": dict}
Lister = Callable[[dict[str, Any], dict[str, Credentials]], dict[str, list[dict[str, Any]]]]
"""`(servers by name, credentials by server) -> listing by server`; raises ServerDown."""


class ServerDown(Exception):
    """A server named at create could not be listed; the create fails and nothing is made."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"MCP server {server} could not be reached to list its tools: {reason}")
        self.server = server


def wanted_servers(body: dict[str, Any], configured: dict[str, dict[str, Any]]
                   ) -> tuple[dict[str, dict[str, Any]], dict[str, Credentials]]:
    """The configured servers a create body names, and the credentials it gives for them."""
    names = body.get("mcp_servers")
    if names is None:
        names = []
    if not isinstance(names, list):
        raise InvalidRequest("mcp_servers: expected list")
    for name in names:
        if not isinstance(name, str):
            raise InvalidRequest("mcp_servers: names must be strings")
        if name not in configured:
            raise InvalidRequest(f"mcp_servers: unknown name {name!r}")
    if len(set(names)) != len(names):
        raise InvalidRequest("mcp_servers: names must not repeat")
    servers = {name: {"name": name, **configured[name]} for name in names}
    return servers, parse_credentials(body.get("mcp_credentials"), servers)


def tool_entries(servers: dict[str, dict[str, Any]], credentials: dict[str, Credentials],
                 listings: dict[str, list[dict[str, Any]]],
                 taken: set[str]) -> list[dict[str, Any]]:
    """Each listed tool as a session Tool entry `server.tool`; a name clash is refused."""
    entries = []
    for name, spec in servers.items():
        allowed = spec.get("tools")
        for listed in listings.get(name, []):
            tool = listed.get("name")
            if not isinstance(tool, str) or not NAME.match(tool):
                continue  # a name no model provider accepts cannot be offered
            if allowed is not None and tool not in allowed:
                continue
            full = f"{name}.{tool}"
            if full in taken:
                raise InvalidRequest(f"mcp_servers: tool {full!r} clashes with a configured Tool")
            taken.add(full)
            entry = {"name": full, "route": "mcp", "tool": tool,
                     "description": listed.get("description") or "",
                     "input_schema": listed.get("inputSchema") or {"type": "object"},
                     "server": _recorded(spec), "credentials": name in credentials}
            if listed.get("annotations"):
                entry["annotations"] = listed["annotations"]
            entries.append(entry)
    return entries


def _recorded(spec: dict[str, Any]) -> dict[str, Any]:
    """The server's table as recorded: the operator's table holds no secret (servers.py)."""
    return {key: value for key, value in spec.items() if key != "description"}
