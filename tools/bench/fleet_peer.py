"""The LangGraph arm of the fleet benchmark, run in a subprocess of its own
(`python -m tools.bench.fleet_peer`) so its memory and GIL are its own; it prints one JSON
line that tools/bench/fleet.py reads."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tools.bench.common import own_cpu_seconds
from tools.bench.fleet_drive import Fleet, arm_result, drive
from tools.bench.fleet_measure import PssSampler, idle_pss_kib
from tools.bench.fleet_shapes import (
    OK,
    PHASE_SLACK_SECS,
    REPO,
    REQUEST_TIMEOUT_SECS,
    ArmResult,
    Workload,
)

# Only the fleet's shapes, drive and measure modules and tools/bench/peer.py are imported here,
# never Brain's client SDK or the other benchmarks: the subprocess's PSS is then the LangGraph
# application's, not this tool's.


class PeerThread:
    """One thread_id's turns through the peer's compiled graph."""

    def __init__(self, run_turn: Callable[[str, str], None], thread_id: str) -> None:
        self._run_turn, self._thread_id = run_turn, thread_id

    def turn(self, index: int) -> str:
        try:
            self._run_turn(self._thread_id, f"fleet turn {index}")
        except Exception as exc:  # counted by type, as Brain's answers are by code
            return f"{type(exc).__name__}: {str(exc)[:80]}"
        return OK

    def close(self) -> None:
        pass


def peer_main(w: Workload, durability: str) -> None:
    """The subprocess: warm-up, then the timed fleet; one JSON line on stdout."""
    from tools.bench.peer import build_graph, open_saver, turn_runner

    me = os.getpid()
    with tempfile.TemporaryDirectory(prefix="brain-bench-fleet-peer-") as tmp:
        saver = open_saver(Path(tmp) / "fleet.sqlite")
        run_turn = turn_runner(build_graph(saver, 0, delay_ms=w.delay_ms), durability, 0)
        warm = drive(w.warm_sessions, 1, lambda n: PeerThread(run_turn, f"warm-{n}"),
                     time.monotonic() + REQUEST_TIMEOUT_SECS)
        time.sleep(1.0)
        idle = idle_pss_kib(lambda: [me])
        cpu_start = own_cpu_seconds()
        with PssSampler(lambda: [me]) as sampler:
            fleet = drive(w.sessions, w.turns, lambda n: PeerThread(run_turn, f"fleet-{n}"),
                          time.monotonic() + w.ideal + PHASE_SLACK_SECS)
        cpu = own_cpu_seconds() - cpu_start
        saver.conn.close()
    print(json.dumps({
        "outcomes": fleet.outcomes, "wall": fleet.wall, "stuck": fleet.stuck,
        "warm_up": dict(Counter(c for c, _, _ in warm.outcomes)), "warm_up_wall": warm.wall,
        "idle_pss_kib": idle, "peak_pss_kib": sampler.peak_kib, "samples": sampler.samples,
        "cpu_secs": cpu - sampler.cpu_secs, "sampler_cpu_secs": sampler.cpu_secs,
        "threads_at_end": threading.active_count()}), flush=True)


def peer_arm(w: Workload, durability: str, log: Callable[[str], None]) -> ArmResult | None:
    """Run `--peer` in a subprocess and read its one JSON line; None if it failed."""
    env = {**os.environ, "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
    cmd = [sys.executable, "-m", "tools.bench.fleet_peer", "--sessions", str(w.sessions),
           "--turns", str(w.turns), "--delay-ms", str(w.delay_ms), "--warm-up",
           str(w.warm_sessions), "--peer-durability", durability]
    budget = 2 * REQUEST_TIMEOUT_SECS + w.ideal + PHASE_SLACK_SECS + 60
    try:
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=budget)
    except subprocess.TimeoutExpired:
        log(f"  LangGraph: the peer did not finish within {budget:.0f} s (killed)")
        return None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        log(f"  LangGraph: the peer failed (exit {done.returncode}): {done.stderr[-2000:]}")
        return None
    data = json.loads(lines[-1])
    fleet = Fleet([tuple(o) for o in data["outcomes"]], data["wall"], data["stuck"])
    log(f"  LangGraph warm-up: {w.warm_sessions} thread_ids x 1 turn in "
        f"{data['warm_up_wall']:.2f} s: {data['warm_up']}")
    result = arm_result(f"LangGraph ({durability})", fleet, w.sessions * w.turns, w.ideal)
    result.idle_pss_kib, result.peak_pss_kib = data["idle_pss_kib"], data["peak_pss_kib"]
    result.pss_samples, result.peak_processes = data["samples"], 1
    result.cpu_secs, result.sampler_cpu_secs = data["cpu_secs"], data["sampler_cpu_secs"]
    result.extra["threads_at_end"] = data["threads_at_end"]
    return result


def main() -> None:
    """The subprocess's entry: the parent (tools/bench/fleet.py) names every number."""
    parser = argparse.ArgumentParser(description="the fleet benchmark's LangGraph arm")
    for flag in ("--sessions", "--turns", "--delay-ms", "--warm-up"):
        parser.add_argument(flag, type=int, required=True)
    parser.add_argument("--peer-durability", choices=("async", "sync", "exit"), default="async")
    args = parser.parse_args()
    peer_main(Workload("peer", args.sessions, args.turns, args.delay_ms, warm_up=args.warm_up),
              args.peer_durability)


if __name__ == "__main__":
    main()
