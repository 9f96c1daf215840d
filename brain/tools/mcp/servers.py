"""An operator's `[mcp_servers.NAME]` tables: what each field means and when a table is refused.

A server is reached over Streamable HTTP (`url`) or started as a child process speaking stdio
(`command`, `args`, `env`). Everything in the table is recorded in the configuration of each
session that uses the server, so a table holds no secret: an operator-wide token is named by
`bearer_token_env` (the variable is read in the Tool executor when a call is made), and a
session's own credentials come with its create body (credentials.py).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

SERVER_FIELDS = ("url", "command", "args", "env", "headers", "bearer_token_env", "tools",
                 "timeout_s", "stateless", "max_processes", "description")
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_PROCESSES = 32
NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""Server and tool names a model provider accepts in a function name; `.` is the separator."""


def server_problem(name: str, spec: dict[str, Any]) -> str | None:
    """Why the table `[mcp_servers.name]` can never work, or None; found at load, not at a call."""
    if not NAME.match(name):
        return "a server name is letters, digits, _ and - (it prefixes its tools as NAME.tool)"
    unknown = sorted(set(spec) - set(SERVER_FIELDS))
    if unknown:
        return f"unknown field {unknown[0]!r} (one of {', '.join(SERVER_FIELDS)})"
    if ("url" in spec) == ("command" in spec):
        return "give exactly one of url (Streamable HTTP) or command (stdio)"
    if "url" in spec:
        url = spec["url"]
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            return "url must be an http:// or https:// URL"
        if parts.username or parts.password:
            return "url must not carry credentials (use bearer_token_env or per-session ones)"
        for field in ("args", "env", "stateless", "max_processes"):
            if field in spec:
                return f"{field} applies to a stdio server (command), not to a url"
    else:
        if not isinstance(spec["command"], str) or not spec["command"]:
            return "command must be a non-empty string"
        if not _strings(spec.get("args", [])):
            return "args must be a list of strings"
        if not _string_table(spec.get("env", {})):
            return "env must be a table of strings"
        if not isinstance(spec.get("stateless", False), bool):
            return "stateless must be true or false"
        bound = spec.get("max_processes", DEFAULT_MAX_PROCESSES)
        if not isinstance(bound, int) or isinstance(bound, bool) or bound < 1:
            return "max_processes must be a positive integer"
    if not _string_table(spec.get("headers", {})):
        return "headers must be a table of strings"
    token_env = spec.get("bearer_token_env")
    if token_env is not None and (not isinstance(token_env, str) or not token_env):
        return "bearer_token_env must name an environment variable"
    allowed = spec.get("tools")
    if allowed is not None and (not _strings(allowed) or not all(NAME.match(t) for t in allowed)):
        return "tools must be a list of tool names (letters, digits, _ and -)"
    timeout = spec.get("timeout_s", DEFAULT_TIMEOUT_S)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0:
        return "timeout_s must be a positive number of seconds"
    return None


def transport_of(spec: dict[str, Any]) -> str:
    """`http` or `stdio`: how the server is reached."""
    return "http" if "url" in spec else "stdio"


def timeout_of(spec: dict[str, Any]) -> float:
    """How long connecting and listing may take. A call's own deadline is BRAIN_MAX_TOOL_SECS,
    which `timeout_s`, only when the operator set it, shortens (call.py)."""
    return float(spec.get("timeout_s", DEFAULT_TIMEOUT_S))


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _string_table(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items())
