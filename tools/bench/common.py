"""Shared benchmark helpers: percentiles and the same-disk fdatasync baseline."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path


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


def summary_ms(samples: list[float]) -> str:
    return (f"p50 {percentile(samples, 0.5) * 1000:.2f} ms, "
            f"p99 {percentile(samples, 0.99) * 1000:.2f} ms, "
            f"mean {statistics.fmean(samples) * 1000:.2f} ms")
