"""Brain against its LangGraph peer, and every speed target of Brain's turn path, in one run.

Usage: python -m tools.bench.compare [--quick] [--rounds N] [--burst N]
                                     [--peer-durability async|sync|exit]

Needs the `bench` extra (`pip install -e '.[bench]'`). One invocation measures, on this machine:

1. Rounds of three arms, each run by Brain and by the peer in alternating blocks (BLOCKS per
   side; Brain first in even blocks, the peer first in odd ones), so that the shared CPU's
   swings of speed, which last about a minute, hit Brain and the peer alike: the sequential
   text arm (one session's sync turns after a warm-up turn), the text arm with 16 sessions at
   once (one thread each) and the tool arm with 16 at once (2 model rounds of 4 parallel `echo`
   calls, then the answer). Brain is a real `brain serve` over HTTP, sessions with the default
   release policy and the scripted 512-byte answer of tools/bench/workload.py; the peer is
   tools/bench/peer.py in a subprocess (`--serve`), the same turns on LangGraph thread_ids, one
   database per arm. Each block continues the previous block's conversations; a concurrent
   arm's rate is its turns over its seconds, summed over its blocks (each block timed from its
   start to its last completion). Every concurrent arm, Brain's and the peer's, first runs
   WARM_UP_TURNS untimed turns per session, all at once, and Brain repeats them until two rounds
   of them in a row start no process: throughput is measured at its steady state (Brain's warm
   pool grows to the concurrency on first use; the peer's threads make their first
   checkpoints). Each ratio is taken within a round; the median over rounds is judged.
2. The fsync ceiling: the raw write+fdatasync rate of Brain's data dir (each round) and the
   commits per text turn counted from the journals of the 16 concurrent sessions.
3. A released session's turn against a resident one's (tools/bench/sessions.py), alternating.
4. The USS of a resident session's process and of an idle (pooled) actor
   (tools/bench/actor_memory.py).
5. The burst (tools/bench/burst.py) on a fresh server: sessions created, then one async submit
   each, all at once, the model answering after 5 s.

Every line of the summary names its target and says PASS or MISS; lines without a target say
INFO. `--quick` is a smoke check (smaller counts, a 100-session burst) of about a minute; its
numbers are not the targets' measure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tests.support.server import BrainServer
from tools.bench import actor_memory
from tools.bench.burst import burst, describe
from tools.bench.common import bench_server, loadavg, percentile, raw_fdatasync_rate
from tools.bench.ledger import add_record_flag, recorded
from tools.bench.sessions import released_vs_resident
from tools.bench.turns import WARM_UP_TURNS, batches, concurrent_turns, sequential_turns, settle
from tools.bench.workload import TEXT_MODEL, TOOL_MODEL, brain_config

REPO = Path(__file__).resolve().parents[2]
SESSIONS = 16
DEADLINE_SECS = 600.0
BLOCKS = 4
"""Each arm of a round runs as up to this many blocks per side, Brain's and the peer's in
alternation: the CPU of this shared machine changes speed from one minute to the next, and an
arm that ran whole after the other's could meet another speed."""


def blocks_of(turns: int) -> tuple[int, int]:
    """(blocks, turns per block): the most blocks up to BLOCKS that divide `turns` evenly."""
    blocks = next(b for b in range(min(BLOCKS, turns), 0, -1) if turns % b == 0)
    return blocks, turns // blocks


@dataclass(frozen=True)
class Profile:
    turns: int  # sequential text turns per round
    per_session: int  # text turns per concurrent session per round
    tool_per_session: int  # tool turns per concurrent session per round
    rounds: int
    released_turns: int  # turns of each of the released and resident sessions
    gap_ms: int  # pause after each of those turns, so a release completes
    memory_sessions: int
    burst: int


FULL = Profile(turns=200, per_session=20, tool_per_session=10, rounds=2, released_turns=100,
               gap_ms=50, memory_sessions=10, burst=600)
QUICK = Profile(turns=30, per_session=4, tool_per_session=2, rounds=2, released_turns=20,
                gap_ms=50, memory_sessions=4, burst=100)


@dataclass
class Round:
    brain_p50: float
    brain_text_rate: float
    peer_p50: float
    peer_text_rate: float
    brain_tool_rate: float
    peer_tool_rate: float
    fsync_rate: float
    commits_per_turn: float
    hung: list[str]

    def ceiling_ratio(self) -> float:
        """Brain's concurrent text turn rate over what the disk's fsyncs alone would allow."""
        return self.brain_text_rate / (self.fsync_rate / self.commits_per_turn)


class Peer:
    """The LangGraph peer (`tools.bench.peer --serve`) in a subprocess, run block by block."""

    def __init__(self, durability: str) -> None:
        env = {**os.environ, "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tools.bench.peer", "--serve", "--sessions", str(SESSIONS),
             "--durability", durability],
            cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._read()  # ready

    def _read(self) -> dict[str, Any]:
        line = self._proc.stdout.readline() if self._proc.stdout else ""
        if not line:
            raise SystemExit(f"the peer exited (status {self._proc.wait(timeout=10)})")
        answer = json.loads(line)
        if "error" in answer:
            raise SystemExit(f"the peer failed: {answer['error']}")
        return answer

    def ask(self, **request: Any) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)


@dataclass
class Rate:
    """Turns and seconds summed over the blocks of one side's concurrent arm."""

    turns: int = 0
    elapsed: float = 0.0
    hung: list[str] = field(default_factory=list)

    def add(self, turns: int, elapsed: float) -> None:
        self.turns += turns
        self.elapsed += elapsed

    @property
    def per_sec(self) -> float:
        return self.turns / self.elapsed if self.elapsed > 0 else 0.0


def brain_block(server: BrainServer, ids: list[str], per_session: int, rate: Rate,
                what: str) -> None:
    run = concurrent_turns(server, ids, per_session, time.monotonic() + DEADLINE_SECS)
    if run.errors:
        raise SystemExit(f"Brain {what} arm failed: {run.errors[0]!r}")
    rate.add(run.turns, run.elapsed)
    rate.hung += run.hung


def alternate(blocks: int, brain: Any, peer: Any) -> None:
    """`blocks` blocks of each side, Brain first in even blocks and the peer first in odd ones:
    neither side always runs right after the other's load."""
    for block in range(blocks):
        for side in ((brain, peer) if block % 2 == 0 else (peer, brain)):
            side()


def one_round(server: BrainServer, profile: Profile, durability: str, n: int) -> Round:
    """Brain's arms and the peer's, block by block in alternation (BLOCKS blocks per arm)."""
    fsync_rate = raw_fdatasync_rate(server.data_dir)
    peer = Peer(durability)
    try:
        sid = server.create_session(model=TEXT_MODEL)["id"]
        server.send(sid, "warm-up")
        peer.ask(op="warm_up", arm="text", turns=WARM_UP_TURNS)
        brain_lat: list[float] = []
        peer_lat: list[float] = []
        hung: list[str] = []

        blocks, each = blocks_of(profile.turns)

        def brain_sequential() -> None:
            latencies, stuck = sequential_turns(server, sid, each,
                                                time.monotonic() + DEADLINE_SECS)
            brain_lat.extend(latencies)
            hung.extend(stuck)

        alternate(blocks, brain_sequential, lambda: peer_lat.extend(
            peer.ask(op="sequential", turns=each)["latencies"]))

        rates = {arm: (Rate(), Rate()) for arm in ("text", "tools")}
        for arm, model, tools, per_session in (
                ("text", TEXT_MODEL, [], profile.per_session),
                ("tools", TOOL_MODEL, ["echo"], profile.tool_per_session)):
            ids = [server.create_session(model=model, tools=tools)["id"]
                   for _ in range(SESSIONS)]
            settle(server, ids, WARM_UP_TURNS)
            if arm == "tools":
                peer.ask(op="warm_up", arm="tools", turns=WARM_UP_TURNS)
            brain_rate, peer_rate = rates[arm]
            blocks, each = blocks_of(per_session)
            alternate(
                blocks,
                lambda ids=ids, arm=arm, each=each, rate=brain_rate:
                    brain_block(server, ids, each, rate, arm),
                lambda arm=arm, each=each, rate=peer_rate:
                    rate.add(**peer.ask(op="concurrent", arm=arm, per_session=each)))
            if arm == "text":
                commits = batches(server, ids)
    finally:
        peer.close()
    brain_text, peer_text = rates["text"]
    brain_tools, peer_tools = rates["tools"]
    r = Round(percentile(brain_lat, 0.5), brain_text.per_sec, percentile(peer_lat, 0.5),
              peer_text.per_sec, brain_tools.per_sec, peer_tools.per_sec, fsync_rate,
              statistics.fmean(commits) if commits else float("nan"),
              hung + brain_text.hung + brain_tools.hung)
    print(f"round {n}: text p50 Brain {r.brain_p50 * 1000:.1f} ms, peer {r.peer_p50 * 1000:.1f} "
          f"ms; text x{SESSIONS} Brain {r.brain_text_rate:.1f}, peer {r.peer_text_rate:.1f} "
          f"turns/s; tools x{SESSIONS} Brain {r.brain_tool_rate:.1f}, peer "
          f"{r.peer_tool_rate:.1f} turns/s; raw fdatasync {r.fsync_rate:,.0f}/s, "
          f"{r.commits_per_turn:.2f} commits/text turn; {loadavg()}", flush=True)
    return r


def verdict(value: float, target: float, at_least: bool) -> str:
    if value != value:  # NaN: nothing measured
        return "MISS"
    return "PASS" if (value >= target if at_least else value <= target) else "MISS"


def line(label: str, value: str, target: str, result: str) -> str:
    return f"{result:<4} {value:>14}  target {target:<9} {label}"


def median_ratio(rounds: list[Round], num: str, den: str) -> tuple[float, str]:
    ratios = [getattr(r, num) / getattr(r, den) for r in rounds]
    return statistics.median(ratios), ", ".join(f"{x:.2f}" for x in ratios)


def summary(rounds: list[Round], released: tuple[list[float], list[float]],
            memory: actor_memory.ActorMemory, burst_lines: list[str], burst_checks: dict,
            quick: bool) -> list[str]:
    out = []
    for label, num, den, target, at_least in (
        (f"{SESSIONS} concurrent text turns, turns/s Brain/peer", "brain_text_rate",
         "peer_text_rate", 1.0, True),
        ("single-session text turn p50, Brain/peer", "brain_p50", "peer_p50", 1.0, False),
        (f"tool arm x{SESSIONS}, turns/s Brain/peer", "brain_tool_rate", "peer_tool_rate", 1.5,
         True),
    ):
        ratio, each = median_ratio(rounds, num, den)
        sign = ">=" if at_least else "<="
        out.append(line(f"{label} (rounds: {each})", f"{ratio:.2f}x", f"{sign} {target}",
                        verdict(ratio, target, at_least)))
    lat_rel, lat_res = released
    rel = percentile(lat_rel, 0.5) / percentile(lat_res, 0.5)
    out.append(line(f"released/resident Brain turn p50 ({percentile(lat_rel, .5) * 1000:.1f} / "
                    f"{percentile(lat_res, .5) * 1000:.1f} ms)", f"{rel:.2f}x", "<= 1.3",
                    verdict(rel, 1.3, False)))
    size = burst_checks["sessions"]
    note = " (--quick; the target is for 600)" if quick else ""
    out.append(line(f"burst of {size}{note}: every answer within 1 s "
                    f"(p50 {burst_checks['p50'] * 1000:,.0f} ms)",
                    f"max {burst_checks['max'] * 1000:,.0f} ms", "<= 1000 ms",
                    verdict(burst_checks["max"], 1.0, False)))
    out.append(line(f"burst: errors (429/503 well-formed: {burst_checks['refused']})",
                    str(burst_checks["errors"]), "0",
                    "PASS" if burst_checks["errors"] == 0 else "MISS"))
    out.append(line("burst: turns ended", f"{burst_checks['ended']} of {size}", "all",
                    "PASS" if burst_checks["ended"] == size else "MISS"))
    ceiling = statistics.median(r.ceiling_ratio() for r in rounds)
    commits = statistics.median(r.commits_per_turn for r in rounds)
    out.append(line("text turns x16 / fsync ceiling (rate / (raw fsyncs/s / commits))",
                    f"{ceiling:.3f}", "none", "INFO"))
    out.append(line("commits (fdatasyncs) per text turn", f"{commits:.2f}", "none", "INFO"))
    idle = actor_memory.ActorMemory.median_mib(memory.idle_uss_kib)
    out.append(line(f"USS of an idle pooled actor ({len(memory.idle_uss_kib)} found)",
                    f"{idle:.2f} MiB" if idle is not None else "none", "none", "INFO"))
    held = actor_memory.ActorMemory.median_mib(memory.session_uss_kib)
    out.append(line(f"USS of a resident session's process ({len(memory.session_uss_kib)} of "
                    f"{memory.sessions}; group PSS {memory.pss_per_session_kib / 1024:+.2f} "
                    "MiB/session)", f"{held:.2f} MiB" if held is not None else "none", "none",
                    "INFO"))
    return out + [f"  burst: {text}" for text in burst_lines]


def figures(rounds: list[Round], released: tuple[list[float], list[float]],
            memory: actor_memory.ActorMemory, checks: dict, profile: Profile,
            durability: str, quick: bool) -> dict[str, Any]:
    """The run's figures as one ledger row (docs/results/compare.csv)."""
    lat_rel, lat_res = released
    return {
        "profile": "quick" if quick else "full", "rounds": len(rounds),
        "peer_durability": durability,
        "text_x16_ratio": median_ratio(rounds, "brain_text_rate", "peer_text_rate")[0],
        "single_p50_ratio": median_ratio(rounds, "brain_p50", "peer_p50")[0],
        "tools_x16_ratio": median_ratio(rounds, "brain_tool_rate", "peer_tool_rate")[0],
        "text_x16_turns_per_s": statistics.median(r.brain_text_rate for r in rounds),
        "tools_x16_turns_per_s": statistics.median(r.brain_tool_rate for r in rounds),
        "single_p50_ms": statistics.median(r.brain_p50 for r in rounds) * 1000,
        "released_p50_ms": percentile(lat_rel, 0.5) * 1000,
        "resident_p50_ms": percentile(lat_res, 0.5) * 1000,
        "burst_sessions": checks["sessions"], "burst_max_ms": checks["max"] * 1000,
        "burst_p50_ms": checks["p50"] * 1000, "burst_errors": checks["errors"],
        "burst_ended": checks["ended"],
        "fsync_ceiling": statistics.median(r.ceiling_ratio() for r in rounds),
        "commits_per_text_turn": statistics.median(r.commits_per_turn for r in rounds),
        "idle_actor_uss_mib": actor_memory.ActorMemory.median_mib(memory.idle_uss_kib),
        "session_uss_mib": actor_memory.ActorMemory.median_mib(memory.session_uss_kib),
        "hung_turns": sum(len(r.hung) for r in rounds),
    }


def run(profile: Profile, durability: str, quick: bool, record: bool = False) -> None:
    began = time.monotonic()
    print(f"Brain vs LangGraph {version('langgraph')} + langgraph-checkpoint-sqlite "
          f"{version('langgraph-checkpoint-sqlite')} (SqliteSaver, WAL, synchronous=FULL, "
          f"durability {durability}); {'quick' if quick else 'full'} profile {profile}")
    print(f"before: {loadavg()}", flush=True)
    config = brain_config()
    with bench_server(config=config) as server:
        rounds = [one_round(server, profile, durability, n + 1) for n in range(profile.rounds)]
        lat_rel, lat_res, _ = released_vs_resident(server, profile.released_turns,
                                                   profile.gap_ms, model=TEXT_MODEL)
        print(f"released vs resident done; {loadavg()}", flush=True)
        memory = actor_memory.measure(server, profile.memory_sessions, model=TEXT_MODEL)
    with bench_server(config=config) as server:
        result = burst(server, profile.burst)
    times = result.admission_seconds()
    checks = {"sessions": profile.burst, "p50": percentile(times, 0.5),
              "max": max(times, default=float("nan")), "errors": len(result.errors()),
              "refused": len(result.refused()), "ended": result.ended}
    hung = [h for r in rounds for h in r.hung]
    if hung:
        print(f"HUNG BRAIN TURNS (no reply in 30 s; their sessions were driven no further): "
              f"{len(hung)}: {hung[:5]}")
    print()
    for text in summary(rounds, (lat_rel, lat_res), memory, describe(result), checks, quick):
        print(text)
    print(f"after: {loadavg()}; took {time.monotonic() - began:.0f} s")
    recorded("compare", figures(rounds, (lat_rel, lat_res), memory, checks, profile,
                                durability, quick), record)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a smoke check of about a minute")
    parser.add_argument("--rounds", type=int, help="rounds of the four arms (default 2)")
    parser.add_argument("--burst", type=int, help="sessions in the burst (default 600)")
    parser.add_argument("--peer-durability", choices=("async", "sync", "exit"), default="async",
                        help="LangGraph's durability mode (default: its own default, async)")
    add_record_flag(parser, "compare")
    args = parser.parse_args()
    if importlib.util.find_spec("langgraph") is None:
        raise SystemExit("the LangGraph peer needs the bench extra: pip install -e '.[bench]'")
    profile = QUICK if args.quick else FULL
    if args.rounds or args.burst:
        profile = Profile(**{**profile.__dict__,
                             **({"rounds": args.rounds} if args.rounds else {}),
                             **({"burst": args.burst} if args.burst else {})})
    run(profile, args.peer_durability, args.quick, args.record)


if __name__ == "__main__":
    main()
