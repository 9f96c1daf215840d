"""A data dir on a small filesystem of its own, and a way to fill it up and free it again.

A size-limited tmpfs needs root (or CAP_SYS_ADMIN); where mounting is not allowed the test is
skipped with the reason. The server's log stays outside (BrainServer writes it beside the data
dir), so a full disk never hides what the server said.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

FILLER = "zz-filler"


@contextmanager
def small_filesystem(mount_point: Path, size_mib: int) -> Iterator[Path]:
    mount_point.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs",
                           str(mount_point)], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs for the data dir (needs root or "
                    f"CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, timeout=30)


def fill(mount_point: Path, leave_bytes: int = 0) -> int:
    """Write a filler file until the filesystem is full (or only `leave_bytes` remain free);
    returns the filler's size."""
    path = mount_point / FILLER
    written = 0
    with open(path, "ab", buffering=0) as out:
        for chunk in (1 << 20, 64 << 10, 4 << 10, 512):
            block = b"\0" * chunk
            while free_bytes(mount_point) - chunk >= leave_bytes:
                try:
                    written += out.write(block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    return written


def free_space(mount_point: Path) -> None:
    (mount_point / FILLER).unlink(missing_ok=True)


def free_bytes(mount_point: Path) -> int:
    stat = os.statvfs(mount_point)
    return stat.f_bavail * stat.f_frsize
