"""`brain mcp list NAME` against a real stdio MCP server, as an operator runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.mcp_servers import ROOT, stdio_table

RUN_SECS = 25


def brain_mcp(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    table = stdio_table(tmp_path / "stdio.log")
    config = tmp_path / "brain.toml"
    config.write_text(
        "[mcp_servers.local]\n"
        f"command = {json.dumps(table['command'])}\n"
        f"args = {json.dumps(table['args'])}\n"
        f"env = {{ PYTHONPATH = {json.dumps(ROOT)} }}\n"
        'tools = ["add", "echo"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env.update({"BRAIN_CONFIG": str(config), "PYTHONPATH": ROOT})
    return subprocess.run([sys.executable, "-P", "-m", "brain.cli", "mcp", "list", *args],
                          env=env, capture_output=True, text=True, timeout=RUN_SECS)


def test_lists_what_the_server_offers_and_what_the_allow_list_keeps(tmp_path: Path) -> None:
    done = brain_mcp(tmp_path, "local")
    assert done.returncode == 0, done.stderr
    assert "local.add\n    Add two numbers." in done.stdout
    assert "local.hidden  (not in the allow-list: not offered)" in done.stdout
    as_json = json.loads(brain_mcp(tmp_path, "local", "--json").stdout)
    offered = {t["name"] for t in as_json["tools"] if t["offered"]}
    assert offered == {"local.add", "local.echo"}


def test_an_unknown_name_says_which_are_configured(tmp_path: Path) -> None:
    done = brain_mcp(tmp_path, "nope")
    assert done.returncode == 2
    assert "no MCP server 'nope' is configured (configured: local)" in done.stderr
