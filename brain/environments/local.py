"""A `local` Environment: a working directory on this host, and commands run inside it.

Each method is one journaled op. It either returns the result dict that `environment_op_ended`
records or raises EnvironmentOpError with the outcome `environment_op_failed` records. Methods
validate their request before touching anything, so a malformed request is always `error` with
no effect.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import threading
from pathlib import Path
from typing import Any

from brain.durable_dirs import make_dirs_durable
from brain.environments.deadline import Deadline
from brain.environments.errors import EnvironmentOpError
from brain.environments.paths import confined_parts, open_parent, os_error
from brain.environments.process import run_command
from brain.fds import close_fd

OUTPUT_LIMIT = 1 << 20
READ_LIMIT = 1 << 20
WRITE_LIMIT = 16 << 20


class LocalEnvironment:
    """The Environment rooted at `root` (contract layout: environments/{id}/{name}/)."""

    kind = "local"

    def __init__(
        self,
        root: Path,
        *,
        output_limit: int = OUTPUT_LIMIT,
        read_limit: int = READ_LIMIT,
        write_limit: int = WRITE_LIMIT,
    ) -> None:
        self.root = Path(root)
        if not self.root.is_absolute():
            raise ValueError("environment root must be an absolute path")
        self.output_limit = output_limit
        self.read_limit = read_limit
        self.write_limit = write_limit
        self.detached = False

    def setup(self) -> dict[str, Any]:
        """Create the working directory; running it again on a ready Environment is harmless."""
        if self.root.is_symlink() or (self.root.exists() and not self.root.is_dir()):
            raise EnvironmentOpError("error", "environment root exists and is not a directory")
        created = not self.root.exists()
        try:
            make_dirs_durable(self.root)  # 0700, like every directory of the data dir
        except OSError as exc:
            raise os_error(exc) from None
        self.detached = False
        return {"created": created}

    def exec(
        self, request: dict[str, Any], deadline: float | None, cancel: threading.Event
    ) -> dict[str, Any]:
        """Run `argv` (no shell) in the root; `deadline` is a `time.time()` epoch or None."""
        argv = request.get("argv")
        if (
            not isinstance(argv, list)
            or not argv
            or not all(isinstance(a, str) and "\x00" not in a for a in argv)
            or not argv[0]
        ):
            raise EnvironmentOpError("error", "argv must be a non-empty list of strings")
        stdin = request.get("stdin")
        if stdin is not None and not isinstance(stdin, str):
            raise EnvironmentOpError("error", "stdin must be a string")
        timeout_s = request.get("timeout_s")
        if timeout_s is not None and (
            not isinstance(timeout_s, int | float) or isinstance(timeout_s, bool) or timeout_s <= 0
        ):
            raise EnvironmentOpError("error", "timeout_s must be a number > 0")
        if not self.root.is_dir() or self.root.is_symlink():
            raise EnvironmentOpError("error", "environment is not set up")
        until = Deadline.earliest(deadline, timeout_s)
        data = stdin.encode("utf-8") if stdin else None
        return run_command(argv, self.root, data, until, cancel, self.output_limit)

    def read(self, request: dict[str, Any]) -> dict[str, Any]:
        """A text file's first `read_limit` bytes, decoded as UTF-8 (bad bytes replaced)."""
        parts = confined_parts(self.root, request.get("path"))
        parent = open_parent(self.root, parts, create=False)
        try:
            fd = os.open(
                parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent
            )
        except OSError as exc:
            raise os_error(exc) from None
        finally:
            close_fd(parent)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise EnvironmentOpError("error", "path is not a regular file")
            os.set_blocking(f.fileno(), True)
            data = f.read(self.read_limit + 1)
        truncated = len(data) > self.read_limit
        return {
            "content": data[: self.read_limit].decode("utf-8", errors="replace"),
            "bytes": info.st_size,
            "truncated": truncated,
        }

    def write(self, request: dict[str, Any]) -> dict[str, Any]:
        """Replace a file with `content` (UTF-8), atomically: readers see old or new, not half.

        Missing parent directories are created. The final name is replaced by a rename, so a
        symlink there is replaced, never followed.
        """
        content = request.get("content")
        if not isinstance(content, str):
            raise EnvironmentOpError("error", "content must be a string")
        data = content.encode("utf-8")
        if len(data) > self.write_limit:
            raise EnvironmentOpError("error", f"content exceeds {self.write_limit} bytes")
        parts = confined_parts(self.root, request.get("path"))
        parent = open_parent(self.root, parts, create=True)
        temp = f".brain-write-{secrets.token_hex(8)}"
        try:
            mode = _existing_mode(parent, parts[-1])
            fd = os.open(
                temp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                mode,
                dir_fd=parent,
            )
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.rename(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                _unlink_quietly(parent, temp)
                raise
        except OSError as exc:
            raise os_error(exc) from None
        finally:
            close_fd(parent)
        return {"bytes": len(data)}

    def detach(self) -> dict[str, Any]:
        """Mark the Environment detached. Nothing runs between ops locally, so nothing stops."""
        self.detached = True
        return {"detached": True}

    def teardown(self) -> dict[str, Any]:
        """Remove the working tree. Symlinks inside are removed, never followed."""
        if self.root.is_symlink():
            raise EnvironmentOpError("error", "environment root is a symlink; refusing to remove")
        if not self.root.exists():
            return {"removed": False}
        if not self.root.is_dir():
            raise EnvironmentOpError("error", "environment root is not a directory")
        if not shutil.rmtree.avoids_symlink_attacks:  # fd-based rmtree unlinks, never follows
            raise EnvironmentOpError("error", "teardown needs a platform with a safe rmtree")
        try:
            shutil.rmtree(self.root)
        except OSError as exc:
            raise os_error(exc) from None
        return {"removed": True}


def _existing_mode(parent: int, name: str) -> int:
    """Keep the permission bits of the file being replaced; new files get 0600 (private, like
    everything in the data dir)."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return 0o600
    if stat.S_ISDIR(info.st_mode):
        raise EnvironmentOpError("error", "path is a directory")
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else 0o600


def _unlink_quietly(parent: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=parent)
    except OSError:
        pass
