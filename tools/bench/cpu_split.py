"""CPU per turn of each of Brain's processes: where a turn's cost goes, by role.

Usage: python -m tools.bench.cpu_split [--arm text|tools|slow] [--turns 150] [--sessions 1]
                                       [--delay-ms 500] [--agentloop FILE.wasm] [--messages]

Starts a real `brain serve` with the compare's scripted models (tools/bench/workload.py), runs a
warm-up (with several sessions, as the compare does: until the warm pool has grown to the
concurrency, tools/bench/turns.py `settle`), then `--turns` sync turns (one session
sequentially, or `--sessions` sessions at once, one thread each) while a sampler thread reads
`/proc/PID/stat` of every process of the server's process group every 20 ms. A process that
exits between two samples (a recycled actor) keeps the CPU it had at its last sample, so the
total is a floor. The CPU of each process is summed by role (its `brain: <role>` title; a
session actor's id is dropped) and divided by the turns; the client's own CPU (this process, the
HTTP client) is shown apart. `--agentloop` runs the sessions on that Agentloop (a C module or a
Python component, e.g. one `brain agentloop build` made) instead of the default, so the two
kinds' turns can be split the same way. `--arm slow` runs the text turn on a model that answers
after `--delay-ms` (default 500): the turn waits, so its session actor parks it and takes it up
again, which is what a turn costs where models answer in seconds. Last, the session journal
opens per turn, by how (`brain_journal_opens_total`): `kept`, an actor taking up what it kept
when it let the session go, or `recovered`, a full open. `--messages` runs the same workload
traced (BRAIN_TRACE) and prints, instead of CPU, the actor messages, timers and commits per
turn by kind (tools/bench/message_count.py): tracing costs CPU of its own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from brain.procstat import CLOCK_TICK_SECS, read_stat
from tests.support.metrics_scrape import scrape
from tests.support.server import BrainServer
from tools.bench.common import bench_server, loadavg, own_cpu_seconds, percentile
from tools.bench.message_count import report, since
from tools.bench.sampling import PeriodicSampler
from tools.bench.turns import concurrent_turns, sequential_turns, settle
from tools.bench.workload import SLOW_MODEL, TEXT_MODEL, TOOL_MODEL, brain_config

SAMPLE_SECS = 0.02
METRICS_SETTLE_SECS = 2.5  # released sessions' counts reach /metrics within about a second
BENCH_LOOP = "measured"  # the configured name of an Agentloop given with --agentloop


def _cpu_and_role(pid: int) -> tuple[float, int, str] | None:
    """(CPU seconds, process group, role) of one process, or None if it is gone."""
    try:
        stat = read_stat(pid)
        with open(f"/proc/{pid}/cmdline", "rb") as cmd:
            cmdline = cmd.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    return stat.cpu_ticks * CLOCK_TICK_SECS, stat.pgrp, role_of(cmdline)


def role_of(cmdline: str) -> str:
    if cmdline.startswith("brain: session"):
        return "session actor"
    if cmdline.startswith("brain: "):
        return cmdline[len("brain: "):].split(" [")[0]
    if "gunicorn" in cmdline:
        return "web worker"
    return cmdline[:40] or "?"


class CpuSampler(PeriodicSampler):
    """Last-seen CPU of every process of one process group, sampled in a thread."""

    def __init__(self, pgrp: int) -> None:
        super().__init__(SAMPLE_SECS)
        self.pgrp = pgrp
        self.seen: dict[tuple[int, str], float] = {}
        self.start: dict[tuple[int, str], float] = {}

    def sample(self) -> None:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            got = _cpu_and_role(int(entry))
            if got is not None and got[1] == self.pgrp:
                self.seen[(int(entry), got[2])] = got[0]

    def began(self) -> None:
        self.start = dict(self.seen)

    def started_during(self) -> int:
        """Processes first seen after the run began (forked actors, gunicorn workers)."""
        before = {pid for pid, _ in self.start}
        return len({pid for pid, _ in self.seen} - before)

    def started_roles(self) -> dict[str, int]:
        before = {pid for pid, _ in self.start}
        roles: dict[str, int] = defaultdict(int)
        for pid, role in set(self.seen) - set(self.start):
            if pid not in before:
                roles[role] += 1
        return dict(roles)

    def by_role(self) -> dict[str, float]:
        """CPU seconds spent between enter and exit, by role; a pid renamed mid-run (a pooled
        actor taking a session) is counted under each title it had, from its first sample."""
        per_pid_first: dict[int, float] = {}
        for (pid, _role), cpu in self.start.items():
            per_pid_first[pid] = min(cpu, per_pid_first.get(pid, cpu))
        totals: dict[str, float] = defaultdict(float)
        last_by_pid: dict[int, list[tuple[float, str]]] = defaultdict(list)
        for (pid, role), cpu in self.seen.items():
            last_by_pid[pid].append((cpu, role))
        for pid, samples in last_by_pid.items():
            samples.sort()
            before = per_pid_first.get(pid, 0.0)
            for cpu, role in samples:
                totals[role] += max(0.0, cpu - before)
                before = max(before, cpu)
        return dict(totals)


def measure(server: BrainServer, arm: str, turns: int, sessions: int,
            agentloop: str | None = None, label: str | None = None,
            trace: Path | None = None) -> None:
    """`agentloop` is the configured name the sessions use; `label` names it in the output;
    `trace`, the server's BRAIN_TRACE file, counts messages instead of CPU."""
    model, tools = {"text": (TEXT_MODEL, []), "slow": (SLOW_MODEL, []),
                    "tools": (TOOL_MODEL, ["echo"])}[arm]
    chosen = {} if agentloop is None else {"agentloop": agentloop}
    ids = [server.create_session(model=model, tools=tools, **chosen)["id"]
           for _ in range(sessions)]
    if sessions == 1:
        server.send(ids[0], "warm-up")
    else:  # all at once, as the compare warms up: the pool grows to the concurrency first
        settle(server, ids)
    time.sleep(METRICS_SETTLE_SECS)  # the warm-up's opens reach the metrics first
    opens_before = journal_opens(server)
    pgrp = server.proc.pid  # the server leads its own process group
    traced_from = time.monotonic_ns() // 1000  # the clock trace lines are stamped with
    deadline = time.monotonic() + 600
    client_before = own_cpu_seconds()
    with CpuSampler(pgrp) as sampler:
        began = time.perf_counter()
        if sessions == 1:
            latencies, hung = sequential_turns(server, ids[0], turns, deadline)
            done = len(latencies)
            p50 = f", p50 {percentile(latencies, 0.5) * 1000:.2f} ms"
        else:
            run = concurrent_turns(server, ids, max(1, turns // sessions), deadline)
            done, hung, p50 = run.turns, run.hung, ""
        elapsed = time.perf_counter() - began
    client = own_cpu_seconds() - client_before
    time.sleep(METRICS_SETTLE_SECS)  # also lets every process's trace lines reach the file
    run = f"{arm} arm, {label or agentloop or 'default'} Agentloop, {sessions} session(s)"
    if trace is not None:
        print(f"{run}, {done} turns, traced (no CPU figures: tracing costs CPU)")
        print("\n".join(report(since(trace, traced_from), done)))
        return
    opens = {how: count - opens_before.get(how, 0.0)
             for how, count in journal_opens(server).items()}
    roles = sampler.by_role()
    total = sum(roles.values())
    print(f"{run}, {done} turns in {elapsed:.2f} s ({done / elapsed:.1f} turns/s{p50}), "
          f"hung {len(hung)}; {loadavg()}")
    for role, cpu in sorted(roles.items(), key=lambda item: -item[1]):
        if cpu > 0:
            print(f"  {role:<24} {cpu / done * 1000:6.2f} ms/turn")
    print(f"  {'all of Brain':<24} {total / done * 1000:6.2f} ms/turn")
    print(f"  {'processes started':<24} {sampler.started_during()} "
          f"(titles seen: {sampler.started_roles()})")
    print(f"  {'the client (+sampler)':<24} {client / done * 1000:6.2f} ms/turn")
    print(f"  {'journal opens per turn':<24} " + ", ".join(
        f"{how} {count / done:.2f}" for how, count in sorted(opens.items())))


def journal_opens(server: BrainServer) -> dict[str, float]:
    """`brain_journal_opens_total` by `how`: kept (what the actor kept at its last release of
    the session, taken up) or recovered (a full open)."""
    _, samples = scrape(server)
    return {dict(labels)["how"]: count for (name, labels), count in samples.items()
            if name == "brain_journal_opens_total"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", choices=("text", "tools", "slow"), default="text")
    parser.add_argument("--delay-ms", type=int, default=500,
                        help="the slow arm's model answers after this many ms")
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--sessions", type=int, default=1)
    parser.add_argument("--agentloop", metavar="FILE.wasm",
                        help="run the sessions on this Agentloop instead of the default")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for the server (BRAIN_* are not passed through)")
    parser.add_argument("--messages", action="store_true",
                        help="run traced and print actor messages per turn instead of CPU")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    trace = None
    if args.messages:
        trace = Path(tempfile.mkdtemp(prefix="brain-messages-")) / "trace.jsonl"
        env["BRAIN_TRACE"] = str(trace)
    config = brain_config(args.delay_ms)
    if args.agentloop:
        path = os.path.abspath(args.agentloop)
        config += f'\n[agentloops.{BENCH_LOOP}]\npath = "{path}"\n'
    with bench_server(config=config, env=env) as server:
        measure(server, args.arm, args.turns, args.sessions,
                BENCH_LOOP if args.agentloop else None, args.agentloop, trace)
    if trace is not None:
        shutil.rmtree(trace.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
