"""The create path's MCP step: list the named servers' tools before the session exists.

The Tool executor does the listing (its event loop holds the MCP connections; a web worker runs
under gevent, where the SDK's stdio child processes cannot be watched) and keeps the session's
credentials; this module asks it and adds what it found to the resolved configuration. A server
that cannot be listed fails the create (502 `mcp_server_unavailable`, naming the server) before
anything is recorded, and the executor is told to forget the session again.
"""

from __future__ import annotations

from typing import Any

from brain import errors
from brain.config import BrainConfig
from brain.protocol.mcp import ForgetMcpSession, ListMcpTools, McpToolsListed
from brain.protocol.messages import TOOL_EXECUTOR_GLOBAL_NAME
from brain.tools.mcp.create import tool_entries, wanted_servers
from brain.tools.mcp.servers import timeout_of
from brain.web.gateway import ActorGateway

LISTING_MARGIN_SECS = 10.0


def names_mcp_servers(body: dict[str, Any]) -> bool:
    return bool(body.get("mcp_servers"))


def add_mcp_tools(config: BrainConfig, body: dict[str, Any], resolved: dict[str, Any],
                  session_id: str, gateway: ActorGateway) -> None:
    """Add the named servers' tools to `resolved` (the future `session_created` config)."""
    servers, credentials = wanted_servers(body, config.mcp_servers)
    if not servers:
        return
    from brain.actors.executors.tool import ToolExecutor

    timeout = max(timeout_of(spec) for spec in servers.values()) + LISTING_MARGIN_SECS
    answer = gateway.ask_global(TOOL_EXECUTOR_GLOBAL_NAME, ToolExecutor,
                                ListMcpTools(session_id, servers, credentials), timeout)
    if not isinstance(answer, McpToolsListed) or answer.session_id != session_id:
        forget_mcp_session(gateway, session_id)
        raise errors.Unavailable("the Tool executor did not answer the MCP tool listing; "
                                 "no session was created")
    if answer.down is not None:
        forget_mcp_session(gateway, session_id)
        raise errors.McpServerUnavailable(answer.reason or f"MCP server {answer.down} is down")
    taken = {tool["name"] for tool in resolved["tools"]}
    try:
        entries = tool_entries(servers, credentials, answer.listings, taken)
    except errors.BrainError:
        forget_mcp_session(gateway, session_id)
        raise
    resolved["tools"] = [*resolved["tools"], *entries]
    resolved["mcp_servers"] = list(servers)


def forget_mcp_session(gateway: ActorGateway, session_id: str) -> None:
    """The create failed after the listing: the executor lets the session's parts go."""
    from brain.actors.executors.tool import ToolExecutor

    gateway.tell_global(TOOL_EXECUTOR_GLOBAL_NAME, ToolExecutor, ForgetMcpSession(session_id))
