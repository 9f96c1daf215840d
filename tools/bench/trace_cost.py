"""What BRAIN_TRACE costs a turn: the same turns against a server with tracing off and one with
it on, alternated in rounds within one run (CPU speed swings between runs, not within a round).

Usage: python -m tools.bench.trace_cost [--rounds 6] [--turns 20] [--old-tree DIR]

`--old-tree DIR` adds a third arm, tracing off, running the `brain` package found in DIR (e.g.
`git archive BASE brain | tar -x -C DIR`): whether "off" costs anything against another
version of the code, such as one without tracing. Every server runs from a scratch directory,
so each imports
only the package it is meant to.

Each turn is the tool arm of tools/bench/turns.py (2 model rounds of 4 parallel `echo` calls,
then text: about 80 traced messages and 12 commits), in one resident session per server, so
the latency is the actor path and fsyncs, not the opening of a session. Prints p50/p99 per arm,
trace lines and bytes per turn, and the writer's own cost per line measured in-process.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from pathlib import Path

from tools.bench.common import bench_server, loadavg, summary_ms
from tools.bench.turns import TOOL_CONFIG, alternated_rounds, send


def writer_cost_us(lines: int = 20000) -> tuple[float, float]:
    """Microseconds per line: on the caller's path (`TraceWriter.write`), and to serialize and
    write it (`flush`, the flusher thread's share), in-process with no contention."""
    from brain.tracing.writer import TraceWriter

    with tempfile.TemporaryDirectory() as tmp:
        out = TraceWriter(str(Path(tmp) / "t.jsonl"), everything=False)
        out._ensure_flusher = lambda: None  # type: ignore[method-assign]  (flush below)
        line = {"dir": "send", "kind": "session", "actor": "ActorAddr-(T|:44955)",
                "peer": "ActorAddr-(T|:37895)", "msg": "RunToolCall",
                "session_id": "01a23a13e3d3e4b8a21c53760e122494", "seqs": [8], "fenced_by": 8}
        start = time.perf_counter()
        for _ in range(lines):
            out.write(dict(line))
        written = time.perf_counter()
        out.flush()
        flushed = time.perf_counter()
        return (written - start) / lines * 1e6, (flushed - written) / lines * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--old-tree", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="brain-trace-") as tmp, \
            contextlib.ExitStack() as stack:
        trace = Path(tmp) / "trace.jsonl"
        arms: dict[str, dict[str, str]] = {"off": {}, "on": {"BRAIN_TRACE": str(trace)}}
        if args.old_tree is not None:
            arms["old"] = {"PYTHONPATH": str(args.old_tree.resolve())}
        servers = {arm: stack.enter_context(bench_server(env, TOOL_CONFIG))
                   for arm, env in arms.items()}
        sids = {arm: s.create_session(model="tooluser", tools=["echo"], idle_ttl_ms=0)["id"]
                for arm, s in servers.items()}
        for arm, server in servers.items():  # warm both: executors, pool, caches
            for i in range(3):
                send(server, sids[arm], f"warm {i}")
        lines_before, bytes_before = _lines(trace), _size(trace)
        samples, rounds = alternated_rounds(servers, sids, args.rounds, args.turns)
        time.sleep(0.3)  # the last lines reach the file within 100 ms
        turns = args.rounds * args.turns
        lines = (_lines(trace) - lines_before) / turns
        size = (_size(trace) - bytes_before) / turns
    print(f"load {loadavg()}; {turns} turns per arm, {args.rounds} alternated rounds")
    for arm in samples:
        label = "old code, off" if arm == "old" else f"tracing {arm}"
        print(f"  {label:>13}: {summary_ms(samples[arm])}")
    # Medians of per-round ratios: arms compared only with each other minutes apart.
    ratio = statistics.median(r["on"] / r["off"] for r in rounds)
    print(f"  on/off, median of per-round p50 ratios: {ratio:.3f}x; {lines:.0f} lines, "
          f"{size / 1024:.1f} KiB per turn")
    if "old" in samples:
        ratio = statistics.median(r["off"] / r["old"] for r in rounds)
        print(f"  off/old, median of per-round p50 ratios: {ratio:.3f}x")
    caller, flusher = writer_cost_us()
    print(f"  writer, per line: {caller:.1f} µs on the actor's path, {flusher:.1f} µs in the "
          "flusher thread (in-process, no contention)")




def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


if __name__ == "__main__":
    main()
