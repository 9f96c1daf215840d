"""The fleet benchmark's shapes: its workloads and what one arm measured (tools/bench/fleet.py
describes the benchmark)."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.bench.common import percentile

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
    "small": Workload("small", 100, 2, 500, warm_up=0),
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
