"""The Brain arm with sync sends, and what both Brain arms share: the server, its sessions,
the warm-up, and the timed phase's readings."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tools.bench.common import journal_batches_per_turn, own_cpu_seconds
from tools.bench.fleet_drive import BrainSession, arm_result, drive, error_code, warm_up_line
from tools.bench.fleet_measure import (
    PssSampler,
    group_cpu_seconds,
    idle_pss_kib,
    listen_counters,
)
from tools.bench.fleet_shapes import PHASE_SLACK_SECS, REQUEST_TIMEOUT_SECS, ArmResult, Workload
from tools.bench.workload import SLOW_MODEL


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
