"""TEST HOOK: make one journal fdatasync fail, so tests can prove a failed fsync is fatal.

Enabled only by the environment variable `BRAIN_TEST_FAIL_FSYNC`, which names a trigger file.
While that file exists, the next fdatasync of a journal whose directory path contains the
file's text (a session id, say; empty text matches every journal) fails with EIO instead of
running, and the file is removed, so exactly one fdatasync fails per arming. A test arms it at
the moment it chooses (a turn waiting on a slow model, say) from outside the server.

Unset (production), the writer calls `os.fdatasync` directly: the hook costs one test of a
module global per commit.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

ENV = "BRAIN_TEST_FAIL_FSYNC"


def _failing_fdatasync(trigger: Path) -> Callable[[int, Path], None]:
    def fdatasync(fd: int, journal_dir: Path) -> None:
        try:
            wanted = trigger.read_text()
        except OSError:
            os.fdatasync(fd)
            return
        if wanted.strip() not in str(journal_dir):
            os.fdatasync(fd)
            return
        try:
            trigger.unlink()  # one arming, one failure
        except FileNotFoundError:
            os.fdatasync(fd)  # another process took this arming
            return
        raise OSError(errno.EIO, f"fdatasync failed ({ENV} test hook)")

    return fdatasync


def armed_fdatasync() -> Callable[[int, Path], None] | None:
    """The hook's fdatasync when the environment arms it, else None (the writer then calls
    `os.fdatasync` directly)."""
    trigger = os.environ.get(ENV)
    return _failing_fdatasync(Path(trigger)) if trigger else None
