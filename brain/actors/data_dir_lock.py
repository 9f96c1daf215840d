"""One running Brain per data dir: its boot process holds a lock on `run/owner.lock`.

Two servers on one data dir would each run an actor system whose session actors open the same
journals; the journal's writer lock keeps a single writer per session, but everything else
(the start-up recovery scan, the idempotency store, the live sockets, `run/actor.json`) would
be shared by two owners that do not know of each other. So the boot process, which lives
exactly as long as its actor system, takes an exclusive lock on the data dir before it starts
anything, and a second boot process on the same data dir refuses to start.

The lock is a POSIX record lock (`lockf`), not `flock`: record locks belong to the process
that took them and are not inherited by forks, so the Thespian admin and actors the boot process
forks never keep a dead server's data dir locked, and a SIGKILL frees it at once.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from brain.durable_dirs import PRIVATE_FILE_MODE, make_dirs_durable


class DataDirTaken(RuntimeError):
    """Another running Brain holds this data dir."""

    def __init__(self, data_path: Path, holder: str) -> None:
        self.data_path = data_path
        self.holder = holder
        who = f"another Brain (pid {holder})" if holder else "another Brain"
        super().__init__(f"data dir {data_path} is in use by {who}")


def lock_path(data_path: Path) -> Path:
    return data_path / "run" / "owner.lock"


def hold_data_dir(data_path: Path) -> IO[str]:
    """Lock the data dir for this process and write its pid into the lock file; keep the
    returned file open for as long as the server runs (closing it releases the lock).
    Raises DataDirTaken when another process holds it."""
    path = lock_path(data_path)
    make_dirs_durable(path.parent)
    owner = open(path, "a+", encoding="ascii",  # noqa: SIM115 - held open for the process's life
                 opener=_private)
    try:
        fcntl.lockf(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        owner.seek(0)
        holder = owner.read().strip()
        owner.close()
        raise DataDirTaken(data_path, holder) from None
    owner.seek(0)
    owner.truncate()
    owner.write(f"{os.getpid()}\n")
    owner.flush()
    return owner


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, PRIVATE_FILE_MODE)


def data_dir_holder(data_path: Path) -> str | None:
    """The pid (as written) of the Brain holding `data_path`, or None when nobody holds it.
    Used by `brain serve` to refuse before it starts any process; the boot process's own lock
    stays the authority."""
    try:
        owner = hold_data_dir(data_path)
    except DataDirTaken as taken:
        return taken.holder
    owner.close()  # ours for a moment only: release it for the boot process
    return None
