"""The memory budget: whether the machine still has room for more work.

A turn that waits on its model costs kilobytes (a journal record, an executor's entry, a
socket), not a process, so the number of turns Brain can hold is bounded by memory, not by a
count. Brain is overloaded when the memory it may still take runs out: the memory available to
it (the kernel's `MemAvailable`, or what its cgroup's `memory.max` leaves, whichever is less)
falls below `BRAIN_MEMORY_RESERVE_MB`. Past that point new work (a new session, a new turn) is
refused with 503 `overloaded` and Retry-After, with nothing done; what was accepted still runs.

Reading `/proc/meminfo` costs ~20 µs; a reading is reused for `REFRESH_SECS`, so a burst of
requests reads it a few times a second at most.
"""

from __future__ import annotations

import time
from pathlib import Path

REFRESH_SECS = 0.25
RETRY_AFTER_SECS = 5
DEFAULT_RESERVE_SHARE = 20  # the default reserve is 1/20 of the machine's memory
MIN_DEFAULT_RESERVE_MIB = 256


def meminfo_mib(field: str, path: Path = Path("/proc/meminfo")) -> int | None:
    """A `/proc/meminfo` field in MiB (None where there is no such file or field)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name == field:
            parts = rest.split()
            return int(parts[0]) // 1024 if parts else None
    return None


def cgroup_room_mib(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """What this process's cgroup (v2) still lets it take, when it has a memory limit."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        own = next(line.split("::", 1)[1] for line in lines if line.startswith("0::"))
        folder = root / own.lstrip("/")
        limit = (folder / "memory.max").read_text().strip()
        if limit == "max":
            return None
        current = int((folder / "memory.current").read_text().strip())
    except (OSError, StopIteration, ValueError):
        return None
    return max(0, int(limit) - current) // (1 << 20)


def default_reserve_mib() -> int:
    """5% of the machine's memory, at least 256 MiB: room for the kernel's page cache and
    the server's own growth while it sheds."""
    total = meminfo_mib("MemTotal") or 0
    return max(MIN_DEFAULT_RESERVE_MIB, total // DEFAULT_RESERVE_SHARE)


class MemoryBudget:
    """Asked before new work is taken on; one per process that admits work."""

    def __init__(self, reserve_mib: int | None) -> None:
        self.reserve_mib = default_reserve_mib() if reserve_mib is None else reserve_mib
        self._checked_at = float("-inf")
        self._available: int | None = None

    def available_mib(self) -> int | None:
        """The memory Brain may still take, in MiB (None where the machine does not say)."""
        now = time.monotonic()
        if now - self._checked_at >= REFRESH_SECS:
            self._checked_at = now
            readings = [m for m in (meminfo_mib("MemAvailable"), cgroup_room_mib())
                        if m is not None]
            self._available = min(readings) if readings else None
        return self._available

    def exhausted(self) -> bool:
        available = self.available_mib()
        return available is not None and available < self.reserve_mib

    def refusal_message(self) -> str:
        return (f"the server's memory budget is exhausted ({self.available_mib()} MiB left, "
                f"{self.reserve_mib} MiB reserved); retry after Retry-After")
