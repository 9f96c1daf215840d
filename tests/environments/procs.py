"""Find live processes by working directory, read from /proc (no signals sent)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from brain.procstat import read_stat


def alive(pid: int) -> bool:
    """Running or sleeping; a zombie has already been killed, it only waits to be reaped."""
    try:
        return read_stat(pid).running
    except OSError:
        return False


def living_in(root: Path) -> list[int]:
    """Live processes whose current directory is `root` or below it."""
    real = os.path.realpath(root)
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if (cwd == real or cwd.startswith(real + "/")) and alive(int(name)):
            found.append(int(name))
    return found


def wait_until_gone(root: Path, timeout_s: float = 2.0) -> list[int]:
    """Poll until no process lives in `root`; return whatever still does at the timeout."""
    until = time.monotonic() + timeout_s
    while True:
        left = living_in(root)
        if not left or time.monotonic() >= until:
            return left
        time.sleep(0.02)
