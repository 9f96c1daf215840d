"""What the fleet benchmark reads of processes: descriptor limits, CPU seconds from /proc,
the kernel's listen-queue counters, and PSS, sampled through a timed phase."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from brain.procstat import CLOCK_TICK_SECS, all_stats
from tools.bench.common import pss_kib
from tools.bench.fleet_shapes import SAMPLE_SECS, SAMPLES_IDLE
from tools.bench.sampling import PeriodicSampler

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


WEB_WORKER_TITLE = b"gunicorn: worker"


def web_worker_cpu_seconds(pgrp: int) -> float:
    """utime + stime of the group's gunicorn workers (their process title says so): the CPU
    of the HTTP side alone, which answers a submit's 202 by itself (brain/web/admission.py)."""
    ticks = 0
    for proc in all_stats():
        if proc.pgrp != pgrp:
            continue
        try:
            title = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(WEB_WORKER_TITLE):
            ticks += proc.cpu_ticks
    return ticks * CLOCK_TICK_SECS


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


class PssSampler(PeriodicSampler):
    """The peak of the summed PSS of `pids()`, read every SAMPLE_SECS in a thread.

    Its own CPU (reading smaps_rollup walks page tables) is kept apart (`cpu_secs`), so that
    the client's CPU can be told from the measuring's."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        super().__init__(SAMPLE_SECS)
        self._pids = pids
        self.peak_kib = 0
        self.peak_processes = 0
        self.samples = 0
        self.seen: set[int] = set()
        self.before: set[int] = set()

    def sample(self) -> int:
        pids = self._pids()
        self.seen.update(pids)
        total = sum(pss_kib(pid) for pid in pids)
        if total > self.peak_kib:
            self.peak_kib, self.peak_processes = total, len(pids)
        self.samples += 1
        return total

    def began(self) -> None:
        self.before = set(self.seen)

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
