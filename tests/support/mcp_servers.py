"""Real MCP servers (tests/tools/mcp/mcp_server.py) for tests: an HTTP one in a subprocess,
always stopped, and the stdio table Brain starts itself; each server's log counts its calls."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from tests.support.server import free_port

ROOT = str(Path(__file__).resolve().parents[2])
START_SECS = 30.0
MODULE = "tests.tools.mcp.mcp_server"


class McpHttpServer:
    def __init__(self, log: Path, port: int | None = None) -> None:
        self.log = log
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> McpHttpServer:
        env = {**os.environ, "PYTHONPATH": ROOT}
        self.proc = subprocess.Popen([sys.executable, "-m", MODULE, "http", str(self.log),
                                      str(self.port)], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_SECS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"MCP test server exited with {self.proc.returncode}")
            try:
                requests.get(self.url, timeout=1)
                return self
            except requests.ConnectionError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError("MCP test server did not listen in time")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def mcp_http_server(log: Path) -> Iterator[McpHttpServer]:
    server = McpHttpServer(log).start()
    try:
        yield server
    finally:
        server.stop()


def stdio_table(log: Path, **extra: Any) -> dict[str, Any]:
    """An `[mcp_servers.NAME]` table that starts the test server over stdio."""
    return {"command": sys.executable, "args": ["-m", MODULE, "stdio", str(log)],
            "env": {"PYTHONPATH": ROOT}, **extra}


def log_lines(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def calls(log: Path, tool: str) -> list[dict[str, Any]]:
    return [line for line in log_lines(log) if line["event"] == "call" and line["tool"] == tool]
