"""The `mcp` Tool route: Tools offered by MCP servers, each call fenced like any other effect.

Rooms, one job each: `servers.py` checks an operator's `[mcp_servers.NAME]` tables;
`create.py` reads a create body's `mcp_servers` and `mcp_credentials` and turns a server's tool
listing into the Tool entries recorded in `session_created`; `credentials.py` holds per-session
credentials in memory only; `hub.py` keeps the SDK's async clients on one event loop thread;
`listing.py` fetches `tools/list` at creation; `call.py` sends one `tools/call` and says what
Brain knows of it; `command.py` is `brain mcp list`. Only hub, listing and call import the SDK
(the `mcp` extra), and none of them is imported unless an MCP server is configured. No module
here imports the actors or the journal.
"""

from brain.tools.mcp.servers import SERVER_FIELDS, server_problem

__all__ = ["SERVER_FIELDS", "server_problem"]
