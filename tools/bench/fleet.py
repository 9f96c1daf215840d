"""A fleet waiting on its models: many sessions whose turns spend seconds on a slow model.

Usage: python -m tools.bench.fleet [--workload n1000|n400|submit5000 ...] [--quick]
                                   [--sessions N] [--turns K] [--delay-ms D] [--warm-up W]
                                   [--no-peer] [--peer-durability async|sync|exit]
                                   [--env NAME=VALUE ...] [--json]

Needs the `bench` extra for the LangGraph arm (`pip install -e '.[bench]'`). A real agent's turn
spends most of its time waiting on a model that answers in seconds, so what counts is how many
such waiting turns a server holds at once, and what each one costs while it waits. Here N
sessions each send K sync turns one after another (`POST /v1/sessions/{id}/messages`, which
answers when the turn ended), all N at once, and the model answers every call after D ms with
the compare's 512-byte answer (tools/bench/workload.py: the `bench_slow` scripted model with
`delay_ms = D`). No server can do better than K x D: that is the ideal wall time.

Workloads (`--workload`, repeatable; default all three in this order; `--sessions`, `--turns`
and `--delay-ms` override a preset's N, K and D):
- `n1000`: N=1000, K=2, D=2000 ms, sync sends. Targets: 0 errors, Brain turns/s >= 1.5x the
  LangGraph arm's, (peak PSS - idle PSS) / N <= 1 MiB per waiting turn.
- `n400`: N=400, K=2, D=2000 ms, sync sends. Target: efficiency (ideal / wall) >= 0.8, i.e. a
  wall time within 1.25x the ideal, with every turn ended.
- `submit5000`: N=5000, K=1, D=10000 ms, submitted (`Prefer: respond-async`, answered 202 with
  a receipt once `turn_started` is durable). Targets: every 202 within 1 s, 0 errors, all 5000
  turns ended. No LangGraph arm.
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
The client's CPU and the PSS sampler's are printed apart: reading smaps_rollup of ~70 server
processes costs ~30 ms a sample, about a tenth of one core at SAMPLE_SECS, on the same two cores
as the server. Session creates refused with 503 are retried after Retry-After (untimed).
The LangGraph arm is what tools/bench/peer.py builds (one compiled StateGraph(MessagesState)
with a `model` node, its ScriptedChatModel sleeping D ms per call before the same answer, a
SqliteSaver on a temp file with journal_mode=WAL and synchronous=FULL, LangGraph's default
durability `async`), run in a subprocess (`--peer`, printing one JSON line) so that its memory
is its own and it shares no GIL with Brain's client: W warm-up thread_ids one turn each, then N
threads, each invoking its K turns on its own thread_id. Its peak PSS is its own process's,
sampled the same way. Then the ratio Brain turns/s / LangGraph turns/s.

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
import heapq
import http.client
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from brain.procstat import CLOCK_TICK_SECS, all_stats
from tools.bench.common import journal_batches_per_turn, loadavg, percentile, pss_kib
from tools.bench.workload import ANSWER, SLOW_MODEL

# tools.bench.burst and tools.bench.compare (which pull in Brain's client SDK and the other
# benchmarks) are imported inside the Brain functions: the `--peer` subprocess then holds only
# what tools/bench/peer.py imports, and its PSS is the LangGraph application's, not this tool's.

REPO = Path(__file__).resolve().parents[2]
OK = "ok"
REQUEST_TIMEOUT_SECS = 120.0
PHASE_SLACK_SECS = 240.0
"""No turn starts later than this after the ideal wall time of the timed phase."""
SAMPLE_SECS = 0.25
SAMPLES_IDLE = 4
POLL_INTERVAL_SECS = 1.0
POLL_WORKERS = 2
POLL_RATE = 200.0
"""GETs a second at most, whatever is due: a poll only says when to stop waiting (the turns'
times come from the journals), so it may lag, and must not take the server's CPU."""
POLL_TICK_SECS = 0.25
DEFAULT_WARM_UP = 64
MIB = 1024.0


@dataclass(frozen=True)
class Workload:
    name: str
    sessions: int  # N
    turns: int  # K, sync turns per session, one after another
    delay_ms: int  # D, the model's time to answer each call
    submit: bool = False  # one async submit per session instead of sync sends (K must be 1)
    peer: bool = True  # run the LangGraph arm too
    warm_up: int | None = None  # warm-up sessions (default min(N, DEFAULT_WARM_UP))

    @property
    def ideal(self) -> float:
        return self.turns * self.delay_ms / 1000

    @property
    def warm_sessions(self) -> int:
        return self.warm_up if self.warm_up is not None else min(self.sessions,
                                                                 DEFAULT_WARM_UP)

    def describe(self) -> str:
        how = "async submit" if self.submit else f"{self.turns} sync turn(s)"
        return (f"{self.name}: {self.sessions} sessions x {how}, the model answering after "
                f"{self.delay_ms} ms; ideal wall {self.ideal:.1f} s; "
                f"{self.warm_sessions} warm-up sessions")


PRESETS = {
    "n1000": Workload("n1000", 1000, 2, 2000),
    "n400": Workload("n400", 400, 2, 2000),
    "submit5000": Workload("submit5000", 5000, 1, 10000, submit=True, peer=False),
}
QUICK = (Workload("quick", 50, 1, 1000),
         Workload("quick-submit", 50, 1, 1000, submit=True, peer=False))


# --- what one arm measured ------------------------------------------------------------------


@dataclass
class ArmResult:
    """One arm's timed phase: every attempted turn's outcome, and what it cost."""

    arm: str
    expected: int  # turns the workload asks for (N x K)
    wall: float  # seconds from the release of the fleet to the last answer
    ideal: float
    latencies: list[float]  # seconds of each ok turn
    codes: Counter[str]  # every outcome by code, `ok` included
    stuck: int = 0  # threads still blocked after the deadline
    idle_pss_kib: int = 0
    peak_pss_kib: int = 0
    peak_processes: int = 0
    pss_samples: int = 0
    cpu_secs: float = float("nan")  # the server's (Brain) or the whole process's (peer)
    client_cpu_secs: float = float("nan")  # Brain's client: this process less its sampler
    sampler_cpu_secs: float = float("nan")
    commits: list[int] = field(default_factory=list)  # per turn, from the journals
    forks: int = 0  # processes that started during the timed phase
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> int:
        return self.codes.get(OK, 0)

    @property
    def errors(self) -> dict[str, int]:
        """Every outcome but `ok`, with the turns never sent, most frequent first."""
        counted = Counter({c: n for c, n in self.codes.items() if c != OK})
        missing = self.expected - sum(self.codes.values())
        if missing > 0:
            counted["not sent"] += missing
        return dict(counted.most_common())

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def turns_per_sec(self) -> float:
        return self.ok / self.wall if self.wall > 0 else 0.0

    @property
    def efficiency(self) -> float:
        return self.ideal / self.wall if self.wall > 0 else 0.0

    def mib_per_waiting_turn(self, sessions: int) -> float:
        return (self.peak_pss_kib - self.idle_pss_kib) / MIB / sessions

    def summary(self, sessions: int) -> dict[str, Any]:
        """The numbers, without the per-turn lists, for `--json`."""
        return {
            "arm": self.arm, "expected": self.expected, "ok": self.ok, "errors": self.errors,
            "wall_secs": self.wall, "ideal_secs": self.ideal, "efficiency": self.efficiency,
            "turns_per_sec": self.turns_per_sec, "stuck_threads": self.stuck,
            "p50_secs": percentile(self.latencies, 0.5),
            "p99_secs": percentile(self.latencies, 0.99),
            "idle_pss_mib": self.idle_pss_kib / MIB, "peak_pss_mib": self.peak_pss_kib / MIB,
            "mib_per_waiting_turn": self.mib_per_waiting_turn(sessions),
            "peak_processes": self.peak_processes, "pss_samples": self.pss_samples,
            "cpu_secs": self.cpu_secs, "client_cpu_secs": self.client_cpu_secs,
            "sampler_cpu_secs": self.sampler_cpu_secs,
            "commits_per_turn_median": statistics.median(self.commits) if self.commits else None,
            "forks": self.forks, **self.extra,
        }


# --- processes: descriptors, memory, CPU ----------------------------------------------------


def raise_descriptor_limit() -> tuple[int, int]:
    """Soft RLIMIT_NOFILE up to the hard limit; (soft, hard) after. The server started after
    this inherits it, and the client needs a socket per concurrent session."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def group_cpu_seconds(pgrp: int) -> float:
    """utime + stime + cutime + cstime of every process of group `pgrp`, zombies included (see
    the module docstring: a reaped process's time lives on in its parent's cutime/cstime)."""
    return sum(proc.cpu_ticks + proc.reaped_cpu_ticks
               for proc in all_stats() if proc.pgrp == pgrp) * CLOCK_TICK_SECS


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


LISTEN_COUNTERS = ("ListenOverflows", "ListenDrops", "SyncookiesSent")


def listen_counters() -> dict[str, int]:
    """The kernel's TcpExt counters of connects a full accept queue dropped (or answered with a
    SYN cookie), machine-wide: a burst over the server's listen backlog (gunicorn's 2,048) shows
    there, and the client's connect then waits for a SYN retransmit (1 s, then 2 s, ...)."""
    try:
        lines = [line.split() for line in Path("/proc/net/netstat").read_text().splitlines()
                 if line.startswith("TcpExt:")]
    except OSError:
        return {}
    if len(lines) < 2:
        return {}
    values = dict(zip(lines[0][1:], lines[1][1:], strict=False))
    return {name: int(values[name]) for name in LISTEN_COUNTERS if name in values}


class PssSampler:
    """The peak of the summed PSS of `pids()`, read every SAMPLE_SECS in a thread.

    Its own CPU (reading smaps_rollup walks page tables) is kept apart, so that the client's
    CPU can be told from the measuring's."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self._pids = pids
        self.peak_kib = 0
        self.peak_processes = 0
        self.samples = 0
        self.seen: set[int] = set()
        self.cpu_secs = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> int:
        pids = self._pids()
        self.seen.update(pids)
        total = sum(pss_kib(pid) for pid in pids)
        if total > self.peak_kib:
            self.peak_kib, self.peak_processes = total, len(pids)
        self.samples += 1
        return total

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECS):
            self.sample()
        self.cpu_secs = time.thread_time()  # this thread's CPU, all of it spent sampling

    def __enter__(self) -> PssSampler:
        self.before = set(self._pids())
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.sample()

    def started(self) -> int:
        """Processes first seen during the sampling (forked actors, new workers)."""
        return len(self.seen - self.before)


def idle_pss_kib(pids: Callable[[], list[int]]) -> int:
    """The median of SAMPLES_IDLE samples of the summed PSS, SAMPLE_SECS apart."""
    samples = []
    for n in range(SAMPLES_IDLE):
        if n:
            time.sleep(SAMPLE_SECS)
        samples.append(sum(pss_kib(pid) for pid in pids()))
    return int(statistics.median(samples))


# --- the fleet: N threads, K turns each -----------------------------------------------------


class Turner(Protocol):
    def turn(self, index: int) -> str:
        """Run turn `index`; its outcome's code (OK or an error code)."""

    def close(self) -> None: ...


@dataclass
class Fleet:
    outcomes: list[tuple[str, float, float]]  # (code, seconds, end perf_counter) per attempt
    wall: float
    stuck: int


def ends_session(code: str) -> bool:
    """A timeout or a broken connection leaves the session's state unknown: stop driving it."""
    return code.startswith(("timeout", "connection"))


def drive(sessions: int, turns: int, make: Callable[[int], Turner], deadline: float) -> Fleet:
    """`sessions` threads released at once, each running `turns` turns one after another.

    The wall time runs from the release to the last answer. No turn starts after `deadline`
    (monotonic); a thread still blocked REQUEST_TIMEOUT_SECS after it is left behind."""
    go = threading.Event()
    results: list[list[tuple[str, float, float]]] = [[] for _ in range(sessions)]

    def run(n: int) -> None:
        turner = make(n)
        go.wait()
        try:
            for i in range(turns):
                if time.monotonic() > deadline:
                    return
                start = time.perf_counter()
                code = turner.turn(i)
                end = time.perf_counter()
                results[n].append((code, end - start, end))
                if ends_session(code):
                    return
        finally:
            turner.close()

    threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in range(sessions)]
    for t in threads:
        t.start()
    start = time.perf_counter()
    go.set()
    for t in threads:
        t.join(timeout=max(0.0, deadline + REQUEST_TIMEOUT_SECS + 5 - time.monotonic()))
    outcomes = [o for per in results for o in list(per)]
    last = max((end for _, _, end in outcomes), default=start)
    return Fleet(outcomes, last - start, sum(t.is_alive() for t in threads))


def arm_result(arm: str, fleet: Fleet, expected: int, ideal: float) -> ArmResult:
    codes = Counter(code for code, _, _ in fleet.outcomes)
    latencies = [secs for code, secs, _ in fleet.outcomes if code == OK]
    return ArmResult(arm, expected, fleet.wall, ideal, latencies, codes, stuck=fleet.stuck)


def warm_up_line(arm: str, fleet: Fleet, sessions: int) -> str:
    codes = Counter(code for code, _, _ in fleet.outcomes)
    return (f"  {arm} warm-up: {sessions} sessions x 1 turn in {fleet.wall:.2f} s: "
            f"{dict(codes.most_common())}")


# --- Brain over HTTP ------------------------------------------------------------------------


def error_code(status: int, body: bytes) -> str:
    """`ok` for a 200 whose turn ended; else the status and the API's error code."""
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        return f"{status} (no JSON body)"
    if status == 200:
        if doc.get("status") == "ended":
            return OK
        error = doc.get("error") or {}
        return f"200 turn {doc.get('status')} ({error.get('code', '?')})"
    error = doc.get("error")
    return f"{status} {error.get('code', '?') if isinstance(error, dict) else '?'}"


class BrainSession:
    """One session's sync sends over one keep-alive connection, opened at its first turn."""

    def __init__(self, port: int, token: str, session_id: str) -> None:
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_SECS)
        self._path = f"/v1/sessions/{session_id}/messages"
        self._headers = {"Authorization": f"Bearer {token}",
                         "Content-Type": "application/json"}

    def turn(self, index: int) -> str:
        body = json.dumps({"input": f"fleet turn {index}"}).encode()
        try:
            self._conn.request("POST", self._path, body=body, headers=self._headers)
            resp = self._conn.getresponse()
            data = resp.read()
        except TimeoutError:
            self._conn.close()
            return f"timeout (no answer in {REQUEST_TIMEOUT_SECS:.0f} s)"
        except (OSError, http.client.HTTPException) as exc:
            self._conn.close()
            return f"connection: {type(exc).__name__}"
        if resp.will_close:
            self._conn.close()
        return error_code(resp.status, data)

    def close(self) -> None:
        self._conn.close()


@contextmanager
def brain_server(env: dict[str, str], delay_ms: int) -> Iterator[Any]:
    """A `brain serve` whose `bench_slow` model answers after `delay_ms`."""
    from tools.bench.common import bench_server
    from tools.bench.workload import brain_config

    with bench_server(env=env, config=brain_config(slow_delay_ms=delay_ms)) as server:
        yield server


CREATE_THREADS = 4
CREATE_DEADLINE_SECS = 600.0


def create_sessions(server: Any, count: int, log: Callable[[str], None]) -> list[str]:
    """`count` sessions of the slow model, CREATE_THREADS at a time, untimed. A 503 (which did
    nothing) is retried after its Retry-After: the creates are not what is measured."""
    deadline = time.monotonic() + CREATE_DEADLINE_SECS
    refused: Counter[str] = Counter()

    def create(_: int) -> str:
        while True:
            resp = server.request("POST", "/v1/sessions", json={"model": SLOW_MODEL})
            if resp.status_code == 201:
                return resp.json()["id"]
            if resp.status_code != 503 or time.monotonic() > deadline:
                raise SystemExit(f"session create failed: {resp.status_code} {resp.text[:300]}")
            refused[error_code(503, resp.content)] += 1
            time.sleep(min(float(resp.headers.get("Retry-After", "1")), 5.0))

    start = time.perf_counter()
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        ids = list(pool.map(create, range(count)))
    log(f"  Brain: {count} sessions created in {time.perf_counter() - start:.1f} s"
        + (f" (refused and retried: {dict(refused)})" if refused else ""))
    return ids


def server_pids(server: Any) -> Callable[[], list[int]]:
    from tests.support.server import group_pids

    pgrp = server.proc.pid  # the server leads its own process group
    return lambda: group_pids(pgrp)


def commits_per_turn(server: Any, ids: list[str]) -> list[int]:
    counts: list[int] = []
    for sid in ids:
        counts += journal_batches_per_turn(server.data_dir / "sessions" / sid / "journal")
    return counts


def log_problems(server: Any) -> list[str]:
    """The server log's error lines (Traceback, ERROR, descriptor exhaustion), counted."""
    try:
        text = server.log_path.read_text(errors="replace")
    except OSError:
        return []
    marks = ("Traceback", "ERROR", "Error", "Too many open files", "CRITICAL")
    found = Counter(line.strip()[:160] for line in text.splitlines()
                    if any(m in line for m in marks))
    return [f"{n} x {line}" for line, n in found.most_common(8)]


def warm_up_brain(server: Any, ids: list[str], log: Callable[[str], None]) -> None:
    """One sync turn on each warm-up session, all at once, untimed."""
    deadline = time.monotonic() + REQUEST_TIMEOUT_SECS
    fleet = drive(len(ids), 1, lambda n: BrainSession(server.port, server.token, ids[n]),
                  deadline)
    log(warm_up_line("Brain", fleet, len(ids)))


@dataclass
class Phase:
    """What is read around a timed phase of the server: idle PSS, CPU, the sampler."""

    pids: Callable[[], list[int]]
    pgrp: int
    idle_kib: int = 0
    cpu_start: float = 0.0
    client_start: float = 0.0

    def __enter__(self) -> PssSampler:
        time.sleep(1.0)  # let the warm-up's releases and pool refills finish
        self.idle_kib = idle_pss_kib(self.pids)
        self.sampler = PssSampler(self.pids)
        self.cpu_start = group_cpu_seconds(self.pgrp)
        self.client_start = own_cpu_seconds()
        self.listen_start = listen_counters()
        return self.sampler.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.cpu = group_cpu_seconds(self.pgrp) - self.cpu_start
        self.client = own_cpu_seconds() - self.client_start
        self.listen = {k: v - self.listen_start.get(k, 0) for k, v in listen_counters().items()}
        self.sampler.__exit__(*exc)

    def fill(self, result: ArmResult) -> None:
        s = self.sampler
        result.idle_pss_kib, result.peak_pss_kib = self.idle_kib, s.peak_kib
        result.peak_processes, result.pss_samples = s.peak_processes, s.samples
        result.cpu_secs, result.sampler_cpu_secs = self.cpu, s.cpu_secs
        result.client_cpu_secs = self.client - s.cpu_secs
        result.forks = s.started()
        result.extra["listen_queue"] = self.listen


def ready_fleet(server: Any, w: Workload, log: Callable[[str], None]) -> tuple[list[str], Phase]:
    """Both Brain arms' untimed start: the fleet's and the warm-up's sessions created, the
    warm-up run; the fleet's session ids and the timed phase's sampler, not yet started."""
    ids = create_sessions(server, w.sessions + w.warm_sessions, log)
    fleet_ids, warm_ids = ids[:w.sessions], ids[w.sessions:]
    if warm_ids:
        warm_up_brain(server, warm_ids, log)
    return fleet_ids, Phase(server_pids(server), server.proc.pid)


def brain_sync_arm(w: Workload, env: dict[str, str], log: Callable[[str], None]) -> ArmResult:
    """The Brain arm with sync sends (see the module docstring)."""
    with brain_server(env, w.delay_ms) as server:
        fleet_ids, phase = ready_fleet(server, w, log)
        deadline = time.monotonic() + w.ideal + PHASE_SLACK_SECS
        with phase:
            fleet = drive(w.sessions, w.turns,
                          lambda n: BrainSession(server.port, server.token, fleet_ids[n]),
                          deadline)
        result = arm_result("Brain", fleet, w.sessions * w.turns, w.ideal)
        phase.fill(result)
        result.commits = commits_per_turn(server, fleet_ids)
        result.extra["server_log_problems"] = log_problems(server)
    return result


# --- Brain: submitted turns -----------------------------------------------------------------


def submit_code(answer: Any) -> str:
    if answer.status == 202:
        return OK
    if answer.status == 0:
        return f"submit: {answer.error}"
    return f"submit {error_code(answer.status, answer.body)}"


class Poller:
    """GET /v1/sessions/{id} from POLL_WORKERS threads, one keep-alive connection each."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.requests = 0
        self.errors: Counter[str] = Counter()
        self._local = threading.local()
        self._lock = threading.Lock()

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(
                "127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_SECS)
        return conn

    def ended(self, session_id: str, sequence: int) -> bool:
        """Whether the session's latest turn is the receipt's (or later) and no longer runs."""
        conn = self._conn()
        try:
            conn.request("GET", f"/v1/sessions/{session_id}",
                         headers={"Authorization": f"Bearer {self.token}"})
            resp = conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            self._count(f"poll: {type(exc).__name__}")
            return False
        self._count(None if resp.status == 200 else f"poll {resp.status}")
        if resp.status != 200:
            return False
        turn = json.loads(body).get("turn") or {}
        return turn.get("sequence", 0) >= sequence and turn.get("status") != "running"

    def _count(self, error: str | None) -> None:
        with self._lock:
            self.requests += 1
            if error:
                self.errors[error] += 1


def wait_until_ended(poller: Poller, receipts: dict[str, int], first_poll: float,
                     deadline: float) -> int:
    """Poll each receipt's session from `first_poll` (monotonic), then every
    POLL_INTERVAL_SECS, until its turn no longer runs, at most POLL_RATE GETs a second; the
    sessions never seen ended."""
    due = [(first_poll, sid) for sid in receipts]
    heapq.heapify(due)
    chunk = max(1, int(POLL_RATE * POLL_TICK_SECS))
    with ThreadPoolExecutor(POLL_WORKERS) as pool:
        while due and time.monotonic() < deadline:
            tick = time.monotonic()
            wait = due[0][0] - tick
            if wait > 0:
                time.sleep(min(wait, 1.0))
                continue
            batch = []
            while due and due[0][0] <= tick and len(batch) < chunk:
                batch.append(heapq.heappop(due)[1])
            for sid, done in zip(batch, pool.map(lambda s: poller.ended(s, receipts[s]), batch),
                                 strict=True):
                if not done:
                    heapq.heappush(due, (time.monotonic() + POLL_INTERVAL_SECS, sid))
            time.sleep(max(0.0, tick + len(batch) / POLL_RATE - time.monotonic()))
    return len(due)


def terminal_record(journal: Path, sequence: int) -> tuple[str, int] | None:
    """(kind, at ms) of the record that ended the turn started at `sequence`, if any."""
    from brain.journal import JournalScan

    for frame in JournalScan(journal):
        record = frame.record
        if record["kind"] in ("turn_ended", "turn_failed") and record["seq"] > sequence:
            return record["kind"], record["at"]
    return None


def submitted_turns(server: Any, receipts: dict[str, int], began_wall: float) -> tuple[
        Counter[str], list[float]]:
    """Each accepted turn's end from its journal: codes, and seconds from the burst's start."""
    codes: Counter[str] = Counter()
    latencies = []
    for sid, sequence in receipts.items():
        found = terminal_record(server.data_dir / "sessions" / sid / "journal", sequence)
        if found is None:
            codes["turn not ended"] += 1
        elif found[0] == "turn_failed":
            codes["turn failed"] += 1
        else:
            codes[OK] += 1
            latencies.append(found[1] / 1000 - began_wall)
    return codes, latencies


def brain_submit_arm(w: Workload, env: dict[str, str], log: Callable[[str], None]) -> ArmResult:
    """The Brain arm with one async submit per session (see the module docstring)."""
    from tools.bench.burst import fire

    with brain_server(env, w.delay_ms) as server:
        fleet_ids, phase = ready_fleet(server, w, log)
        poller = Poller(server.port, server.token)
        with phase:
            began_wall, began = time.time(), time.monotonic()
            answers, _ = fire(server.port, server.token, fleet_ids)
            receipts = {sid: json.loads(a.body)["sequence"]
                        for sid, a in zip(fleet_ids, answers, strict=True) if a.status == 202}
            unseen = wait_until_ended(poller, receipts, began + w.delay_ms / 1000,
                                      began + w.ideal + PHASE_SLACK_SECS)
        codes = Counter(submit_code(a) for a in answers if a.status != 202)
        turn_codes, latencies = submitted_turns(server, receipts, began_wall)
        codes.update(turn_codes)
        wall = max(latencies, default=time.monotonic() - began)
        result = ArmResult("Brain", w.sessions, wall, w.ideal, latencies, codes)
        phase.fill(result)
        result.commits = commits_per_turn(server, list(receipts))
        times = [a.seconds for a in answers if a.status]
        accepted = [a.seconds for a in answers if a.status == 202]
        result.extra.update({
            "submits_202": len(accepted), "answer_p50_secs": percentile(times, 0.5),
            "answer_p99_secs": percentile(times, 0.99),
            "answer_max_secs": max(times, default=float("nan")),
            "polls": poller.requests, "poll_errors": dict(poller.errors),
            "never_seen_ended": unseen, "server_log_problems": log_problems(server)})
    return result


# --- the LangGraph arm, in a subprocess -----------------------------------------------------


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
    """The `--peer` subprocess: warm-up, then the timed fleet; one JSON line on stdout."""
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
    cmd = [sys.executable, "-m", "tools.bench.fleet", "--peer", "--sessions", str(w.sessions),
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
    if w.submit:
        x = brain.extra
        every = x["submits_202"] == brain.expected
        out.append(line(f"every 202 within 1 s ({x['submits_202']} of {brain.expected} 202)"
                        f"{note}", f"max {x['answer_max_secs'] * 1000:,.0f} ms", "<= 1000 ms",
                        verdict(x["answer_max_secs"], 1.0, False) if every else "MISS"))
        out.append(line(f"turns ended{note}", f"{brain.ok} of {brain.expected}", "all",
                        "PASS" if brain.ok == brain.expected else "MISS"))
        out.append(line("server peak PSS", f"{brain.peak_pss_kib / MIB:.1f} MiB", "none",
                        "INFO"))
    if peer is not None:
        ratio = brain.turns_per_sec / peer.turns_per_sec if peer.turns_per_sec else float("nan")
        out.append(line("turns/s Brain / LangGraph", f"{ratio:.2f}x", "none", "INFO"))
        pss = brain.peak_pss_kib / peer.peak_pss_kib if peer.peak_pss_kib else float("nan")
        out.append(line("peak PSS Brain (whole server) / LangGraph", f"{pss:.2f}x", "none",
                        "INFO"))
    return out


# --- main -----------------------------------------------------------------------------------


def run_workload(w: Workload, env: dict[str, str], durability: str, with_peer: bool,
                 log: Callable[[str], None]) -> dict[str, Any]:
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
    parser.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:  # the LangGraph arm's subprocess: the parent names every number
        peer_main(Workload("peer", args.sessions, args.turns, args.delay_ms,
                           warm_up=args.warm_up), args.peer_durability)
        return
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
    reports = [run_workload(w, env, args.peer_durability, with_peer, log) for w in workloads]
    log(f"\nafter: {loadavg()}; took {time.monotonic() - began:.0f} s")
    if args.json:
        print(json.dumps({"workloads": reports}, default=str))


if __name__ == "__main__":
    main()
