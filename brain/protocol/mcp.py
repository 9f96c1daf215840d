"""Messages between a web worker, a session actor and the Tool executor about MCP servers.

A create that names MCP servers asks the Tool executor (the process whose event loop holds the
connections, brain/tools/mcp/hub.py) to list their tools and to hold the session's
credentials; the session forgets them when it ends or is deleted. Credentials travel only in
`ListMcpTools`, a Message whose text is its class name (messages.py), never in a record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from brain.protocol.messages import Message


@dataclass(frozen=True)
class ListMcpTools(Message):
    """List each server's tools for a session being created, and hold its credentials."""

    session_id: str
    servers: dict[str, dict[str, Any]]
    credentials: dict[str, Any] = field(repr=False)  # server → brain.tools.mcp Credentials


@dataclass(frozen=True)
class McpToolsListed(Message):
    """The answer: each server's `tools/list`, or the first server that could not be listed."""

    session_id: str
    listings: dict[str, list[dict[str, Any]]]
    down: str | None = None  # the server named in the failure
    reason: str | None = None


@dataclass(frozen=True)
class ForgetMcpSession(Message):
    """The session ended, was deleted or was never made: forget its credentials, stop its
    own stdio servers and close its own connections."""

    session_id: str
