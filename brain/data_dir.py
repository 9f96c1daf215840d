"""The data dir at start: private to Brain's user, and durable from its first mkdir.

Conversations are private: the data dir is made 0700 and every file Brain makes in it 0600.
Rather than trust each of the many places that create a file (some are made by SQLite, some by
`open`, some by a child process), every entry point that writes the data dir sets the process
umask to 077 before it makes anything (`keep_files_private`); the processes it starts (the boot
process, the actors it forks, gunicorn and its workers) inherit it. Files opened with `os.open`
name their mode as well.

A data dir that already exists with group or other bits set is not refused, because an operator
may have made it so on purpose (a backup group reading it, a volume mounted that way); the start
logs one warning naming the mode and the fix, and files Brain makes in it stay 0600
(docs/operations.md, "The data dir").
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from brain.durable_dirs import make_dirs_durable

PRIVATE_UMASK = 0o077

log = logging.getLogger("brain.data_dir")


def keep_files_private() -> int:
    """Make every file and directory this process (and its children) creates owner-only;
    returns the umask it replaces."""
    return os.umask(PRIVATE_UMASK)


def prepare_data_dir(data_path: Path) -> None:
    """Make the data dir (0700, every new component durable) or check the mode of the one
    there: what `brain serve`, `brain actors` and `brain web` do before anything else in it."""
    keep_files_private()
    make_dirs_durable(data_path)
    warn_if_open(data_path)


def open_bits(data_path: Path) -> int:
    """The group and other permission bits of the data dir (0 for a private one)."""
    return stat.S_IMODE(os.stat(data_path).st_mode) & 0o077


def warn_if_open(data_path: Path) -> bool:
    """Log one warning when others may read, write or enter the data dir; True when it did."""
    bits = open_bits(data_path)
    if not bits:
        return False
    mode = stat.S_IMODE(os.stat(data_path).st_mode)
    log.warning("data dir %s has mode %04o: other users may read the conversations in it; "
                "fix it with `chmod 700 %s`", data_path, mode, data_path)
    return True
