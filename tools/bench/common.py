"""Shared benchmark helpers: percentiles and the same-disk fdatasync baseline."""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from brain.protocol.records import TURN_ENDED, TURN_FAILED, TURN_STARTED
from tests.support.server import BrainServer


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def raw_fdatasync_rate(directory: Path, records: int = 2000, size: int = 200) -> float:
    """Appends/s of `size`-byte records, each followed by fdatasync, in `directory`."""
    path = directory / "fsync-baseline.bin"
    payload = os.urandom(size)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        start = time.perf_counter()
        for _ in range(records):
            os.write(fd, payload)
            os.fdatasync(fd)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return records / elapsed


def own_cpu_seconds() -> float:
    """User + system CPU of this process so far (the benchmark's client side)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def summary_ms(samples: list[float]) -> str:
    return (f"p50 {percentile(samples, 0.5) * 1000:.2f} ms, "
            f"p99 {percentile(samples, 0.99) * 1000:.2f} ms, "
            f"mean {statistics.fmean(samples) * 1000:.2f} ms")


def one_fdatasync_latencies(directory: Path, records: int = 500, size: int = 200) -> list[float]:
    """Seconds per write+fdatasync of a `size`-byte record, one sample per record."""
    path = directory / "fsync-latency.bin"
    payload = os.urandom(size)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    samples = []
    try:
        for _ in range(records):
            start = time.perf_counter()
            os.write(fd, payload)
            os.fdatasync(fd)
            samples.append(time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return samples


def loadavg() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} (cpus {os.cpu_count()})"


def journal_batches_per_turn(journal_dir: Path) -> list[int]:
    """Commits (batches) of each finished turn in a session journal, in turn order.

    A batch is one fdatasync: its last frame carries FLAG_END_OF_BATCH. A turn's commits are
    the batches from the one holding its `turn_started` to the one holding its terminal record.
    """
    from brain.journal import JournalScan

    counts: list[int] = []
    in_turn = closing = False
    batches = 0
    for frame in JournalScan(journal_dir):
        kind = frame.record["kind"]
        if kind == TURN_STARTED and not in_turn:
            in_turn, closing, batches = True, False, 0
        if in_turn and kind in (TURN_ENDED, TURN_FAILED):
            closing = True
        if in_turn and frame.header.end_of_batch:
            batches += 1
            if closing:  # the batch holding the terminal record is the turn's last
                counts.append(batches)
                in_turn = closing = False
    return counts


def smaps_rollup(pid: int) -> dict[str, int]:
    """Fields of /proc/PID/smaps_rollup in KiB (empty if the process is gone)."""
    fields: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[-1] == "kB":
                    fields[parts[0].rstrip(":")] = int(parts[1])
    except OSError:
        pass
    return fields


def uss_kib(pid: int) -> int:
    r = smaps_rollup(pid)
    return r.get("Private_Clean", 0) + r.get("Private_Dirty", 0)


def pss_kib(pid: int) -> int:
    return smaps_rollup(pid).get("Pss", 0)


@contextmanager
def bench_server(env: dict[str, str] | None = None,
                 config: str | None = None) -> Iterator[BrainServer]:
    """A started `brain serve` on a fresh data dir in the system temp dir, always killed.

    `config`, if given, is the text of a BRAIN_CONFIG file written beside the data dir.
    """
    with tempfile.TemporaryDirectory(prefix="brain-bench-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        env = dict(env or {})
        if config is not None:
            path = Path(tmp) / "brain.toml"
            path.write_text(config)
            env["BRAIN_CONFIG"] = str(path)
        server = BrainServer(data, env=env).start()
        try:
            yield server
        finally:
            server.kill()
