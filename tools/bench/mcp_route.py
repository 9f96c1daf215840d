"""An MCP Tool turn against the same Tool behind the `http` route: Brain's CPU and latency per
call, and their ratio, from one run.

Usage: python -m tools.bench.mcp_route [--turns 200] [--warmup 20]

One `brain serve` (scripted model, default Agentloop) has two sessions: one names the MCP
server `bench` (tests/tools/mcp/mcp_server.py over Streamable HTTP, in its own process group)
and one the http Tool `add_http` (tests/tools/toolserver.py in this process). Each turn makes
one model call, one `add` Tool call and a second model call; the turns of the two sessions
alternate, so both see the same machine. Reported per turn (one Tool call each): wall time as
the client sees it, and the CPU of Brain's own processes (the process group of `brain serve`:
supervisor, actors, web workers; neither Tool server is in it). The Tool servers' own costs are
left out on purpose: the question is what Brain spends on each route. The machine is shared:
compare ratios, and take two runs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from brain.procstat import all_stats
from brain.protocol.records import TOOL_CALL_ENDED
from tests.support.mcp_servers import McpHttpServer
from tests.tools.toolserver import Conn, Received, ToolServer
from tools.bench.common import bench_server, loadavg, summary_ms

TICKS = os.sysconf("SC_CLK_TCK")

ADD_SCHEMA = ('{ type = "object", '
              'properties = { a = { type = "integer" }, b = { type = "integer" } } }')


def step(route: str, tool: str) -> str:
    """Two script steps (a TOML inline table must stay on one line): call `tool`, then answer."""
    return (f'  {{ when_last_user_matches = "^{route}", '
            f'tool_calls = [ {{ name = "{tool}", input = {{ a = 2, b = 3 }} }} ] }},\n'
            f'  {{ when_last_user_matches = "^{route}", text = "done" }},\n')


def config(http_url: str, mcp_url: str) -> str:
    return (f'[models.bench]\nprovider = "scripted"\nscript = [\n'
            f'{step("mcp", "bench.add")}{step("http", "add_http")}]\n\n'
            f'[tools.add_http]\nroute = "http"\nurl = "{http_url}"\n'
            f'description = "Add two numbers."\ninput_schema = {ADD_SCHEMA}\n\n'
            f'[mcp_servers.bench]\nurl = "{mcp_url}"\ntools = ["add"]\n')


def add(conn: Conn, req: Received) -> None:
    value = req.body["invocation"]["input"]
    conn.answer_json({"content": value["a"] + value["b"], "is_error": False})


def group_cpu_seconds(pgid: int) -> float:
    """CPU of every process in the group, and of its reaped children, so far."""
    ticks = sum(p.cpu_ticks + p.reaped_cpu_ticks for p in all_stats() if p.pgrp == pgid)
    return ticks / TICKS


def all_events(server, sid: str) -> list[dict]:  # type: ignore[no-untyped-def]
    """Every Event of the session, page after page."""
    events: list[dict] = []
    while True:
        page = server.events(sid, after=events[-1]["sequence"] if events else 0)
        if not page:
            return events
        events.extend(page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="measured turns per route")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured turns per route")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="brain-bench-mcp-") as tmp:
        mcp = McpHttpServer(Path(tmp) / "mcp.log").start()
        http = ToolServer(add)
        try:
            with bench_server(config=config(http.url, mcp.url)) as server:
                run(server, args.turns, args.warmup)
        finally:
            http.close()
            mcp.stop()


def run(server, turns: int, warmup: int) -> None:  # type: ignore[no-untyped-def]
    assert server.proc is not None
    pgid = server.proc.pid
    sessions = {
        "mcp": server.create_session(model="bench", mcp_servers=["bench"])["id"],
        "http": server.create_session(model="bench", tools=["add_http"])["id"],
    }
    walls: dict[str, list[float]] = {route: [] for route in sessions}
    cpu: dict[str, float] = {route: 0.0 for route in sessions}
    for index in range(warmup + turns):
        for route, sid in sessions.items():
            before = group_cpu_seconds(pgid)
            started = time.perf_counter()
            answer = server.send(sid, f"{route} {index}")
            wall = time.perf_counter() - started
            spent = group_cpu_seconds(pgid) - before
            assert answer["status"] == "ended", answer
            if index >= warmup:
                walls[route].append(wall)
                cpu[route] += spent
    for route in sessions:
        ended = [e for e in all_events(server, sessions[route])
                 if e["kind"] == TOOL_CALL_ENDED]
        assert len(ended) == warmup + turns and all(e["data"]["outcome"] == "ok" for e in ended)
    print(f"mcp_route: {turns} turns per route (after {warmup} warm-up), one Tool call each; "
          f"load {loadavg()}")
    per_call = {route: cpu[route] / turns for route in sessions}
    for route in ("http", "mcp"):
        print(f"  {route:<5} turn {summary_ms(walls[route])}; "
              f"Brain CPU {per_call[route] * 1000:.2f} ms/call")
    mean = {route: sum(walls[route]) / len(walls[route]) for route in sessions}
    print(f"  ratio mcp/http: CPU {per_call['mcp'] / per_call['http']:.2f}x, "
          f"mean latency {mean['mcp'] / mean['http']:.2f}x (target: at most 1.5x)")


if __name__ == "__main__":
    main()
