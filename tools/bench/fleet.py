"""A fleet waiting on its models: many sessions whose turns spend seconds on a slow model.

Usage: python -m tools.bench.fleet [--workload n1000|n400|submit5000|small ...] [--quick]
                                   [--sessions N] [--turns K] [--delay-ms D] [--warm-up W]
                                   [--no-peer] [--peer-durability async|sync|exit]
                                   [--env NAME=VALUE ...] [--json] [--record]

Needs the `bench` extra for the LangGraph arm (`pip install -e '.[bench]'`). A real agent's turn
spends most of its time waiting on a model that answers in seconds, so what counts is how many
such waiting turns a server holds at once, and what each one costs while it waits. Here N
sessions each send K sync turns one after another (`POST /v1/sessions/{id}/messages`, which
answers when the turn ended), all N at once, and the model answers every call after D ms with
the compare's 512-byte answer (tools/bench/workload.py: the `bench_slow` scripted model with
`delay_ms = D`). No server can do better than K x D: that is the ideal wall time.

Workloads (`--workload`, repeatable; default all four in this order; `--sessions`, `--turns`
and `--delay-ms` override a preset's N, K and D):
- `n1000`: N=1000, K=2, D=2000 ms, sync sends. Targets: 0 errors, Brain turns/s >= 1.5x the
  LangGraph arm's, (peak PSS - idle PSS) / N <= 1 MiB per waiting turn.
- `n400`: N=400, K=2, D=2000 ms, sync sends. Targets: efficiency (ideal / wall) at least the
  LangGraph arm's in the same run (and >= 0.8, i.e. a wall time within 1.25x the ideal), with
  every turn ended.
Every workload with a LangGraph arm also has the target: the server's CPU per ok turn at most
the LangGraph process's.
- `submit5000`: N=5000, K=1, D=10000 ms, submitted (`Prefer: respond-async`, answered 202 with
  a receipt once `turn_started` is durable). Targets: the slowest 202 at most 2x the slowest
  `GET /healthz` of a burst of the same size at the same server (the HTTP floor, below), 0
  errors, all 5000 turns ended. No LangGraph arm.
- `small`: N=100, K=2, D=500 ms, sync sends, on a server just started (no warm-up run: the
  session pool's growth is part of what a small team pays). Targets: Brain turns/s >= 1.0x
  the LangGraph arm's, and server CPU per turn <= 1.0x LangGraph's process CPU per turn.
`--quick` runs instead a smoke check of both arms (N=50, K=1, D=1000 ms) and a 50-session
submit; its numbers judge nothing. Each target line says PASS or MISS, as compare.py's do.

The Brain arm is a real `brain serve` (tools.bench.common.bench_server; fresh data dir in the
system temp dir) with the default session settings. The N sessions (plus W warm-up sessions,
`--warm-up`, default min(N, 64): Brain's default BRAIN_MAX_SESSION_ACTORS) are created first,
untimed; then each warm-up session sends one turn, all at once, so the warm actor pool and the
web workers have seen the workload; then the timed phase: N threads, released together, each
with its own keep-alive `http.client` connection (opened in the timed phase), sending its K
turns. A thread blocked in a socket costs no CPU, and the client's CPU (this process, less the
sampler thread) is measured and printed, so a client that got in the server's way would show.
Every request has a socket timeout of REQUEST_TIMEOUT_SECS, no turn starts after the phase's
deadline (ideal + PHASE_SLACK_SECS), and threads still blocked after it are left behind
(daemons) and counted as stuck. Every answer is counted by its code: `ok` is a 200 whose turn
`ended`; a 200 whose turn `failed` counts by its error code; any other status by its error
code (e.g. `503 overloaded`). HTTP errors leave the session's next turn to run; a timeout or a
closed connection ends that session's loop (its state is unknown) and its remaining turns count
as `not sent`. The submit workload fires its N submits from one selector loop over raw
non-blocking sockets (tools.bench.burst.fire: every connect started before any answer is read,
time to each answer from its connect; a refusal is counted, not retried), then polls each
accepted session (`GET /v1/sessions/{id}`, whose `turn` names the latest turn and its status)
gently: D ms after the burst began, then every POLL_INTERVAL_SECS, at most POLL_WORKERS
requests at once and POLL_RATE a second in all (a first version polled as fast as 4
connections allowed: 21,448 GETs in 32 s for 5,000 turns, CPU the turns needed). A turn's
time is read afterwards from its journal: the `at` (wall-clock ms) of its terminal record,
less the wall time the burst began; the poll only says when to stop waiting.

Measured for Brain, besides wall, ideal, efficiency = ideal / wall, ok and error counts,
turns/s (ok turns / wall) and p50/p99 of the ok turns' latency:
- PSS of the whole server: the sum of `Pss` (smaps_rollup) over every process of its process
  group (tests.support.server.group_pids), idle (the median of SAMPLES_IDLE samples, taken a
  second after the warm-up) and peak (sampled every SAMPLE_SECS in a thread through the timed
  phase), and (peak - idle) / N as the memory of one waiting turn;
- the server's CPU per ok turn: at the start and at the end of the timed phase, the sum of
  utime + stime + cutime + cstime (/proc/PID/stat) over the processes of the group, zombies
  included. A process that exits is reaped by its parent in the group, which adds its time
  (and its own reaped children's) to its cutime/cstime, so nothing that exits is lost and
  nothing counts twice, except a process reaped in the instant the snapshot walks /proc
  (missed or counted twice) or one that left the group (none of Brain's do). The submit
  workload's CPU includes the polls' GETs;
- journal commits (batches, each one fdatasync) per turn, the median over the N sessions'
  turns (tools.bench.common.journal_batches_per_turn);
- processes that started during the timed phase (forked actors), the kernel's machine-wide
  ListenOverflows/ListenDrops/SyncookiesSent over the phase (connects a full accept queue
  dropped: the client then waits for a SYN retransmit), and the server log's error lines
  (Traceback, ERROR, "Too many open files"), if any.
The submit workload also prints its baseline from the same run, the HTTP floor
(tools/bench/fleet_floor.py): once every turn ended, the same client fires as many
`GET /healthz` at once at the same server, and the slowest 202 and the web workers' CPU per 202
are printed against that request's, which does nothing (no credentials, no disk, no actor). The
n400 workload prints the efficiency its CPU per turn allows (`wave_bound_efficiency`), for both
arms: every session's first model answer comes D after its first send at the earliest, and its
last model call starts D before the end at the latest, so the work between (K - 1 of its K turns'
CPU, as every turn costs about the same) falls into wall - 2 x D on the CPUs the arm can use:
Brain's processes all of the machine's, LangGraph's one process its one GIL.
The client's CPU and the PSS sampler's are printed apart: reading smaps_rollup of ~70 server
processes costs ~30 ms a sample, about a tenth of one core at SAMPLE_SECS, on the same two cores
as the server. Session creates refused with 503 are retried after Retry-After (untimed).
The LangGraph arm is what tools/bench/peer.py builds (one compiled StateGraph(MessagesState)
with a `model` node, its ScriptedChatModel sleeping D ms per call before the same answer, a
SqliteSaver on a temp file with journal_mode=WAL and synchronous=FULL, LangGraph's default
durability `async`), run in a subprocess (tools/bench/fleet_peer.py, one JSON line) so that its
memory is its own and it shares no GIL with Brain's client: W warm-up thread_ids one turn each,
then N threads, each invoking its K turns on its own thread_id. Its peak PSS is its own
process's, sampled the same way. Then the ratio Brain turns/s / LangGraph turns/s.

Server settings: nothing is tuned. The shipped gunicorn settings (brain/web/gunicorn_conf.py)
already give each of the 2 gevent web workers 4,096 connections (8,192 in all, over the 5,000
connections of the submit burst and the 1,000 sync sends) and raise a worker's soft descriptor
limit to 4,352 if the hard limit allows; this benchmark raises its own soft RLIMIT_NOFILE to the
hard limit before it starts the server (the server inherits it: its actors hold journal and
socket descriptors, and the client needs one socket per session) and warns if the limit is
under what the workload needs. `--env NAME=VALUE` hands other settings to the server (e.g.
BRAIN_WEB_WORKERS=4, or GUNICORN_CMD_ARGS='--backlog 4096'); they are printed in the header.
`--json` prints one JSON object (every workload's numbers and target lines) instead of text.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tools.bench.common import loadavg, percentile
from tools.bench.fleet_brain import brain_sync_arm
from tools.bench.fleet_measure import raise_descriptor_limit
from tools.bench.fleet_peer import peer_arm
from tools.bench.fleet_shapes import MIB, PRESETS, QUICK, ArmResult, Workload
from tools.bench.fleet_submit import brain_submit_arm
from tools.bench.ledger import add_record_flag, recorded
from tools.bench.workload import ANSWER

# --- the report -----------------------------------------------------------------------------


def secs(value: float) -> str:
    return f"{value:.2f} s" if value == value else "none"


def arm_lines(r: ArmResult, w: Workload) -> list[str]:
    errors = r.errors or "none"
    out = [f"{r.arm}:",
           f"  wall {secs(r.wall)}, ideal {secs(r.ideal)}, efficiency {r.efficiency:.2f}",
           f"  ok {r.ok} of {r.expected}; errors {errors}"
           + (f"; {r.stuck} threads stuck past the deadline" if r.stuck else ""),
           f"  {r.turns_per_sec:.1f} turns/s; ok turn latency p50 "
           f"{secs(percentile(r.latencies, 0.5))}, p99 {secs(percentile(r.latencies, 0.99))}",
           f"  PSS idle {r.idle_pss_kib / MIB:.1f} MiB, peak {r.peak_pss_kib / MIB:.1f} MiB "
           f"({r.peak_processes} process(es), {r.pss_samples} samples); (peak - idle) / N "
           f"{r.mib_per_waiting_turn(w.sessions):.3f} MiB per waiting turn"]
    per_turn = r.cpu_secs / r.ok * 1000 if r.ok else float("nan")
    if r.arm == "Brain":
        out.append(f"  server CPU {r.cpu_secs:.2f} s = {per_turn:.2f} ms per ok turn; client "
                   f"CPU {r.client_cpu_secs:.2f} s, PSS sampler {r.sampler_cpu_secs:.2f} s")
        median = statistics.median(r.commits) if r.commits else float("nan")
        spread = f" (min {min(r.commits)}, max {max(r.commits)})" if r.commits else ""
        out.append(f"  commits per turn: median {median:.1f}{spread} over {len(r.commits)} "
                   f"turns; processes started during the timed phase: {r.forks}")
        out.append(f"  kernel listen-queue counters during the timed phase (machine-wide): "
                   f"{r.extra.get('listen_queue') or 'unreadable'}")
    else:
        out.append(f"  process CPU {r.cpu_secs:.2f} s = {per_turn:.2f} ms per ok turn "
                   f"(sampler {r.sampler_cpu_secs:.2f} s apart); "
                   f"threads at the end {r.extra.get('threads_at_end')}")
    if "submits_202" in r.extra:
        x = r.extra
        out.append(f"  submits: {x['submits_202']} answered 202; time to the answer p50 "
                   f"{x['answer_p50_secs'] * 1000:,.0f} ms, p99 "
                   f"{x['answer_p99_secs'] * 1000:,.0f} ms, max "
                   f"{x['answer_max_secs'] * 1000:,.0f} ms; {x['polls']} polls "
                   f"(errors {x['poll_errors'] or 'none'}), {x['never_seen_ended']} never "
                   "seen ended")
        burst, floor = x["submit_burst"], x["healthz_floor"]
        out.append(f"  web workers' CPU while the submits were answered: "
                   f"{burst['web_cpu_ms_each']:.2f} ms per 202")
        out.append(f"  HTTP floor (the same server afterwards, {floor['answered']} GET /healthz "
                   f"answered of {r.expected} at once): p50 "
                   f"{floor['p50_secs'] * 1000:,.0f} ms, max {floor['max_secs'] * 1000:,.0f} ms;"
                   f" web workers' CPU {floor['web_cpu_ms_each']:.2f} ms per request")
    for problem in r.extra.get("server_log_problems", []):
        out.append(f"  server log: {problem}")
    return out


def targets(w: Workload, brain: ArmResult, peer: ArmResult | None) -> list[str]:
    """Each target of the workload with its value, PASS or MISS (tools.bench.compare's)."""
    from tools.bench.compare import line, verdict

    name = "n1000" if w.name == "quick" else w.name
    note = " (quick: not the target's measure)" if w.name.startswith("quick") else ""
    out = [line(f"Brain errors of {brain.expected} turns{note}", str(brain.error_count), "0",
                "PASS" if brain.error_count == 0 else "MISS")]
    if name == "n1000":
        ratio = (brain.turns_per_sec / peer.turns_per_sec
                 if peer and peer.turns_per_sec > 0 else float("nan"))
        detail = (f"{brain.turns_per_sec:.1f} / {peer.turns_per_sec:.1f}" if peer
                  else "no LangGraph arm")
        out.append(line(f"turns/s Brain / LangGraph ({detail}){note}", f"{ratio:.2f}x",
                        ">= 1.5", verdict(ratio, 1.5, True)))
        mib = brain.mib_per_waiting_turn(w.sessions)
        out.append(line(f"(peak - idle PSS) / N, MiB per waiting turn{note}", f"{mib:.3f}",
                        "<= 1", verdict(mib, 1.0, False)))
    if name == "n400":
        whole = brain.error_count == 0
        out.append(line(f"efficiency ideal/wall ({secs(brain.ideal)} / {secs(brain.wall)})"
                        + ("" if whole else ", MISS: not every turn ended ok"),
                        f"{brain.efficiency:.2f}", ">= 0.8",
                        verdict(brain.efficiency, 0.8, True) if whole else "MISS"))
        if peer is not None:
            out.append(line(f"efficiency Brain / LangGraph ({brain.efficiency:.2f} / "
                            f"{peer.efficiency:.2f}, the same run)",
                            f"{over(brain.efficiency, peer.efficiency):.2f}x", ">= 1.0",
                            verdict(over(brain.efficiency, peer.efficiency), 1.0, True)
                            if whole else "MISS"))
        cpus = os.cpu_count() or 1
        peer_bound = (f"; LangGraph's {wave_bound_efficiency(w, peer, 1):.2f} (one GIL), "
                      f"measured {peer.efficiency:.2f}" if peer else "")
        out.append(line(f"efficiency its CPU per turn allows, about: K x D / max(K x D, 2 x D + "
                        f"(K - 1) / K x CPU s / {cpus} cpus){peer_bound}",
                        f"{wave_bound_efficiency(w, brain, cpus):.2f}", "none", "INFO"))
    if w.submit:
        x = brain.extra
        every = x["submits_202"] == brain.expected
        out.append(line(f"slowest 202 ({x['submits_202']} of {brain.expected} 202){note}",
                        f"max {x['answer_max_secs'] * 1000:,.0f} ms", "none",
                        "INFO" if every else "MISS"))
        out.append(line(f"turns ended{note}", f"{brain.ok} of {brain.expected}", "all",
                        "PASS" if brain.ok == brain.expected else "MISS"))
        out.append(line("server peak PSS", f"{brain.peak_pss_kib / MIB:.1f} MiB", "none",
                        "INFO"))
        burst, floor = x["submit_burst"], x["healthz_floor"]
        floor_ratio = over(burst["max_secs"], floor["max_secs"])
        out.append(line(f"slowest 202 / slowest GET /healthz (HTTP floor, same burst size){note}",
                        f"{floor_ratio:.2f}x", "<= 2.0",
                        verdict(floor_ratio, 2.0, False) if every else "MISS"))
        out.append(line("web CPU per 202 / per GET /healthz",
                        f"{over(burst['web_cpu_ms_each'], floor['web_cpu_ms_each']):.2f}x",
                        "none", "INFO"))
    if name == "small":
        ratio = (brain.turns_per_sec / peer.turns_per_sec
                 if peer and peer.turns_per_sec > 0 else float("nan"))
        out.append(line("turns/s Brain / LangGraph, from a server just started", f"{ratio:.2f}x",
                        ">= 1.0", verdict(ratio, 1.0, True)))
    if peer is not None:
        ratio = brain.turns_per_sec / peer.turns_per_sec if peer.turns_per_sec else float("nan")
        out.append(line("turns/s Brain / LangGraph", f"{ratio:.2f}x", "none", "INFO"))
        mine, theirs = cpu_ms_per_turn(brain), cpu_ms_per_turn(peer)
        out.append(line(f"CPU per ok turn, Brain's server / LangGraph's process ({mine:.2f} / "
                        f"{theirs:.2f} ms){note}", f"{over(mine, theirs):.2f}x", "<= 1.0",
                        verdict(over(mine, theirs), 1.0, False)))
        pss = brain.peak_pss_kib / peer.peak_pss_kib if peer.peak_pss_kib else float("nan")
        out.append(line("peak PSS Brain (whole server) / LangGraph", f"{pss:.2f}x", "none",
                        "INFO"))
    return out


def cpu_ms_per_turn(arm: ArmResult) -> float:
    """The arm's CPU (Brain: every process of the server; LangGraph: its process) per ok turn."""
    return arm.cpu_secs * 1000 / arm.ok if arm.ok else float("nan")


def over(value: float, baseline: float) -> float:
    """value / baseline, NaN when the baseline read zero (a small burst's CPU can fall under one
    clock tick)."""
    return value / baseline if baseline else float("nan")


def wave_bound_efficiency(w: Workload, arm: ArmResult, cpus: int) -> float:
    """The best efficiency the arm's CPU per turn permits on `cpus` CPUs, however its work is
    ordered. No model answer comes before D, and each session's last model call starts D before
    the wall at the latest; between the two every session does K - 1 turns' worth of CPU (the
    end of one turn and the start of the next), which `cpus` CPUs do in no less than its CPU
    seconds over them. One turn (K = 1) has no such stretch: its bound is the ideal itself."""
    if arm.ideal <= 0:
        return float("nan")
    if w.turns < 2:
        return 1.0
    between = (w.turns - 1) / w.turns * arm.cpu_secs / cpus
    return arm.ideal / max(arm.ideal, 2 * w.delay_ms / 1000 + between)


# --- main -----------------------------------------------------------------------------------


def ledger_row(w: Workload, brain: ArmResult, peer: ArmResult | None) -> dict[str, Any]:
    """One workload's figures as a row of docs/results/fleet.csv."""
    def per_turn(arm: ArmResult | None) -> float | None:
        return arm.cpu_secs / arm.ok * 1000 if arm and arm.ok else None

    row: dict[str, Any] = {
        "workload": w.name, "sessions": w.sessions, "turns": w.turns, "delay_ms": w.delay_ms,
        "errors": brain.error_count, "ok": brain.ok, "turns_per_s": brain.turns_per_sec,
        "peer_turns_per_s": peer.turns_per_sec if peer else None,
        "ratio_to_peer": (brain.turns_per_sec / peer.turns_per_sec
                          if peer and peer.turns_per_sec else None),
        "efficiency": brain.efficiency, "peer_efficiency": peer.efficiency if peer else None,
        "p50_s": percentile(brain.latencies, 0.5), "p99_s": percentile(brain.latencies, 0.99),
        "cpu_ms_per_turn": per_turn(brain), "peer_cpu_ms_per_turn": per_turn(peer),
        "mib_per_waiting_turn": brain.mib_per_waiting_turn(w.sessions),
        "peak_pss_mib": brain.peak_pss_kib / MIB,
        "commits_per_turn": statistics.median(brain.commits) if brain.commits else None,
    }
    if w.submit:
        x = brain.extra
        row.update({"slowest_202_s": x["answer_max_secs"], "p50_202_s": x["answer_p50_secs"],
                    "healthz_max_s": x["healthz_floor"]["max_secs"]})
    return row


def run_workload(w: Workload, env: dict[str, str], durability: str, with_peer: bool,
                 log: Callable[[str], None], record: bool = False) -> dict[str, Any]:
    """Brain's arm, then (if the workload has one) the LangGraph arm; their report."""
    log(f"\n== {w.describe()}")
    log(f"  before: {loadavg()}")
    arm = brain_submit_arm if w.submit else brain_sync_arm
    brain = arm(w, env, log)
    log(f"  Brain done: {loadavg()}")
    peer = peer_arm(w, durability, log) if (w.peer and with_peer) else None
    if peer is not None:
        log(f"  LangGraph done: {loadavg()}")
    verdicts = targets(w, brain, peer)
    for text in arm_lines(brain, w) + (arm_lines(peer, w) if peer else []) + [""] + verdicts:
        log(text)
    recorded("fleet", ledger_row(w, brain, peer), record)
    return {"workload": w.__dict__, "brain": brain.summary(w.sessions),
            "peer": peer.summary(w.sessions) if peer else None, "targets": verdicts}


def parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--env wants NAME=VALUE, got {pair!r}")
        env[name] = value
    return env


def chosen(args: argparse.Namespace) -> list[Workload]:
    """The presets asked for, with --sessions/--turns/--delay-ms/--warm-up applied."""
    base = list(QUICK) if args.quick else [PRESETS[n] for n in (args.workload or PRESETS)]
    changes: dict[str, Any] = {k: v for k, v in (("sessions", args.sessions),
                                                 ("turns", args.turns),
                                                 ("delay_ms", args.delay_ms),
                                                 ("warm_up", args.warm_up)) if v is not None}
    out = [replace(w, **changes) for w in base]
    for w in out:
        if w.submit and w.turns != 1:
            raise SystemExit(f"{w.name}: the submit workload sends one turn per session")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", action="append", choices=sorted(PRESETS),
                        help="a preset (repeatable; default: n1000, n400, submit5000)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke check: 50 sessions x 1 turn, 1 s model, both arms; "
                             "and a 50-session submit")
    parser.add_argument("--sessions", type=int, help="N, overrides the preset's")
    parser.add_argument("--turns", type=int, help="K, overrides the preset's")
    parser.add_argument("--delay-ms", type=int, help="D, overrides the preset's")
    parser.add_argument("--warm-up", type=int, help="warm-up sessions (default min(N, 64))")
    parser.add_argument("--no-peer", action="store_true", help="skip the LangGraph arm")
    parser.add_argument("--peer-durability", choices=("async", "sync", "exit"),
                        default="async", help="LangGraph's durability mode (default async)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for the server (repeatable)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    add_record_flag(parser, "fleet")
    args = parser.parse_args()
    run_all(chosen(args), args)


def run_all(workloads: list[Workload], args: argparse.Namespace) -> None:
    env = parse_env(args.env)
    quiet = args.json

    def log(text: str) -> None:
        print(text, file=sys.stderr if quiet else sys.stdout, flush=True)

    soft, hard = raise_descriptor_limit()
    began = time.monotonic()
    log(f"fleet: sessions waiting on a scripted model ({len(ANSWER)}-byte answer); "
        f"RLIMIT_NOFILE {soft}/{hard}; server env {env or 'defaults'}; {loadavg()}")
    need = max(w.sessions + w.warm_sessions for w in workloads) + 256
    if soft < need:
        log(f"warning: the descriptor limit {soft} is under the {need} this run may hold")
    with_peer = not args.no_peer
    if with_peer and any(w.peer for w in workloads):
        import importlib.util

        if importlib.util.find_spec("langgraph") is None:
            raise SystemExit("the LangGraph arm needs the bench extra: pip install -e "
                             "'.[bench]' (or --no-peer)")
    reports = [run_workload(w, env, args.peer_durability, with_peer, log, args.record)
               for w in workloads]
    log(f"\nafter: {loadavg()}; took {time.monotonic() - began:.0f} s")
    if args.json:
        print(json.dumps({"workloads": reports}, default=str))


if __name__ == "__main__":
    main()
