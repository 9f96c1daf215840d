"""What Linux says about a process in `/proc/<pid>/stat`, read in one place.

The line is `pid (comm) state ppid pgrp session ... starttime ...`. The command name sits in
parentheses and may itself hold spaces or ")", so the fields are counted from the LAST ")".
Brain reads this to find its descendants (the supervisor), to see whether an Environment's
process group still runs, and to tell a live idempotency claimant from a reused pid; the
benchmarks (tools/bench/) read the CPU time of a server's processes from it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

DEAD_STATES = frozenset({"Z", "X"})
"""Zombie (exited, not yet reaped) and dead: neither can act any more."""
CLOCK_TICK_SECS = 1.0 / os.sysconf("SC_CLK_TCK")
"""One clock tick, the unit of the start and CPU times below."""


@dataclass(frozen=True)
class ProcStat:
    """The fields Brain uses; `start_time` is in clock ticks since boot, as the kernel gives it,
    and the CPU times are in clock ticks too."""

    pid: int
    state: str
    ppid: int
    pgrp: int
    start_time: int
    cpu_ticks: int  # utime + stime: this process's own CPU
    reaped_cpu_ticks: int  # cutime + cstime: that of its children it has waited for

    @property
    def running(self) -> bool:
        """Alive in the sense that matters: not a zombie, not dead."""
        return self.state not in DEAD_STATES


def parse_stat(pid: int, line: bytes) -> ProcStat:
    """Fields of one stat line; ValueError when it is not one."""
    try:
        fields = line[line.rindex(b")") + 1 :].split()
        return ProcStat(pid, fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[19]),
                        int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
    except IndexError:
        raise ValueError(f"not a /proc stat line: {line[:80]!r}") from None


def read_stat(pid: int) -> ProcStat:
    """The stat of `pid`; OSError when there is no such process (or no /proc)."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        line = stat.read()
    try:
        return parse_stat(pid, line)
    except ValueError:
        # an empty read: the process went away between open and read
        raise ProcessLookupError(pid) from None


def all_stats() -> Iterator[ProcStat]:
    """Every process visible now; one that exits while being read is skipped."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                yield read_stat(int(entry))
            except OSError:
                continue
