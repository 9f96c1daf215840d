"""Whether the process that made an idempotency claim may still answer it.

A claim records its process as (pid, start time): the start time from `/proc/<pid>/stat`, in
clock ticks since the OS booted, so that a pid reused by a later process is not taken for the
claimer (docs/idempotency.md, "In progress or ambiguous").
"""

from __future__ import annotations

import os

from brain.procstat import read_stat


def own_start_time() -> str:
    """This process's start time in clock ticks since OS boot, or '' without /proc."""
    return str(read_stat(os.getpid()).start_time) if os.path.isdir("/proc/self") else ""


def process_alive(pid: int, start: str) -> bool:
    """Whether the process that recorded (pid, start) still runs and so may still answer."""
    if start:
        try:
            proc = read_stat(pid)
        except OSError:
            return False
        return proc.running and str(proc.start_time) == start
    try:  # no /proc: the pid alone, which a reused pid can fool (docs/idempotency.md)
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
