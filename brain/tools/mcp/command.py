"""`brain mcp list NAME`: what a configured MCP server offers, for an operator setting it up.

It reads the same configuration `brain serve` would (BRAIN_CONFIG), connects to the server as
the Tool executor would (without any session's credentials; `--bearer-token-env VAR` adds one),
and prints each tool the server lists: its session name (`NAME.tool`), whether the table's
allow-list lets it through, its description and its input schema. Nothing is journaled.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

DESCRIPTION = """\
Connect to the configured MCP server NAME (a [mcp_servers.NAME] table of BRAIN_CONFIG) and
print the tools it lists, as a session naming it would offer them (NAME.tool). Exit 1 when
the server cannot be reached, 2 when NAME is not configured."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    mcp = sub.add_parser("mcp", help="inspect configured MCP servers",
                         description="Inspect the MCP servers of BRAIN_CONFIG.")
    actions = mcp.add_subparsers(dest="mcp_command", required=True)
    listing = actions.add_parser("list", help="print the tools a configured MCP server offers",
                                 description=DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    listing.add_argument("name", help="the server's name in [mcp_servers]")
    listing.add_argument("--json", action="store_true", help="one JSON document instead")
    listing.add_argument("--bearer-token-env", metavar="VAR",
                         help="send the token in this environment variable, as a session's "
                              "credentials would be sent")


def run(args: argparse.Namespace, servers: dict[str, dict[str, Any]]) -> int:
    """`servers`: the `[mcp_servers]` of the loaded configuration (brain/cli.py loads it)."""
    spec = servers.get(args.name)
    if spec is None:
        known = ", ".join(sorted(servers)) or "none"
        print(f"brain mcp: no MCP server {args.name!r} is configured (configured: {known})",
              file=sys.stderr)
        return 2
    return _list(args, {"name": args.name, **spec})


def _list(args: argparse.Namespace, spec: dict[str, Any]) -> int:
    from brain.tools.mcp.create import ServerDown
    from brain.tools.mcp.credentials import Credentials
    from brain.tools.mcp.hub import Hub
    from brain.tools.mcp.listing import list_servers

    credentials = {}
    if args.bearer_token_env:
        token = os.environ.get(args.bearer_token_env)
        if not token:
            print(f"brain mcp: {args.bearer_token_env} is not set", file=sys.stderr)
            return 2
        credentials[spec["name"]] = Credentials(bearer_token=token)
    hub = Hub()
    try:
        listing = list_servers(hub, {spec["name"]: spec}, "brain-mcp-list", credentials)
    except ServerDown as down:
        print(f"brain mcp: {down}", file=sys.stderr)
        return 1
    finally:
        hub.close()
    allowed = spec.get("tools")
    tools = [{**tool, "name": f"{spec['name']}.{tool['name']}",
              "offered": allowed is None or tool["name"] in allowed}
             for tool in listing[spec["name"]]]
    if args.json:
        print(json.dumps({"server": spec["name"], "tools": tools}, indent=2))
        return 0
    for tool in tools:
        mark = "" if tool["offered"] else "  (not in the allow-list: not offered)"
        print(f"{tool['name']}{mark}")
        if tool.get("description"):
            print(f"    {tool['description']}")
        print(f"    input: {json.dumps(tool.get('inputSchema', {}), sort_keys=True)}")
        if tool.get("annotations"):
            print(f"    annotations: {json.dumps(tool['annotations'], sort_keys=True)}")
    return 0
