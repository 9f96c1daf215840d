"""Whether the process that made an idempotency claim may still answer it.

A claim records its process as (pid, start time): the start time from `/proc/<pid>/stat`, in
clock ticks since the OS booted, so that a pid reused by a later process is not taken for the
claimer (docs/idempotency.md, "In progress or ambiguous").
"""

from __future__ import annotations

import os


def own_start_time() -> str:
    """This process's start time in clock ticks since OS boot, or '' without /proc."""
    return _read_proc_stat(os.getpid())[1] if os.path.isdir("/proc/self") else ""


def _read_proc_stat(pid: int) -> tuple[str, str]:
    """(state, starttime) of `pid` from /proc; raises OSError if there is no such process."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        data = stat.read()
    # The command name is in parentheses and may itself contain ")" or spaces.
    fields = data[data.rindex(b")") + 2 :].split()
    return fields[0].decode(), fields[19].decode()


def process_alive(pid: int, start: str) -> bool:
    """Whether the process that recorded (pid, start) still runs and so may still answer."""
    if start:
        try:
            state, started = _read_proc_stat(pid)
        except (OSError, ValueError, IndexError):
            return False
        return state not in ("Z", "X") and started == start
    try:  # no /proc: the pid alone, which a reused pid can fool (docs/idempotency.md)
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
