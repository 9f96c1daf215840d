"""Confine request paths to an Environment's root.

A request path is checked twice. First by name: it must be relative, and `.`/`..` are resolved
lexically, so a path that climbs above the root is refused before the filesystem is touched.
Then by what it resolves to: symlinks are followed (links that stay inside the root are allowed)
and the real path must still be inside the root. Finally the file is opened one component at a
time from a descriptor of the root with O_NOFOLLOW, along the real path just computed, so that a
process inside the Environment swapping a directory for a symlink between the check and the open
makes the open fail instead of escaping.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from brain.environments.errors import EnvironmentOpError
from brain.fds import close_fd

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
ESCAPE = "path escapes the environment"


def request_parts(path: Any) -> list[str]:
    """The components of a request path after lexical `.`/`..` handling; refuses escapes."""
    if not isinstance(path, str) or not path:
        raise EnvironmentOpError("error", "path must be a non-empty string")
    if "\x00" in path:
        raise EnvironmentOpError("error", "path contains a NUL byte")
    if path.startswith("/"):
        raise EnvironmentOpError("error", f"{ESCAPE}: absolute paths are refused")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise EnvironmentOpError("error", f"{ESCAPE}: {path}")
            parts.pop()
            continue
        parts.append(part)
    if not parts:
        raise EnvironmentOpError("error", f"{path!r} names the environment root, not a file")
    return parts


def confined_parts(root: Path, path: Any) -> list[str]:
    """The real (symlink-free) components of `path` under `root`, or EnvironmentOpError."""
    parts = request_parts(path)
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(real_root.joinpath(*parts)))
    if real == real_root or not real.is_relative_to(real_root):
        raise EnvironmentOpError("error", f"{ESCAPE}: {path}")
    return list(real.relative_to(real_root).parts)


def open_parent(root: Path, parts: list[str], *, create: bool) -> int:
    """A descriptor of the directory holding `parts[-1]`, reached without following symlinks.

    The caller closes it. With `create`, missing directories are made on the way (mode 0700).
    """
    try:
        fd = os.open(root, DIR_FLAGS)
    except FileNotFoundError:
        raise EnvironmentOpError("error", "environment is not set up") from None
    except OSError:
        raise EnvironmentOpError("error", "environment root is unusable") from None
    try:
        for part in parts[:-1]:
            try:
                next_fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o700, dir_fd=fd)
                next_fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            close_fd(fd)
            fd = next_fd
    except OSError as exc:
        close_fd(fd)
        raise os_error(exc) from None
    return fd


def os_error(exc: OSError) -> EnvironmentOpError:
    """A filesystem failure as a short message that never includes a server path."""
    messages = {
        errno.ENOENT: "no such file or directory",
        errno.ENOTDIR: "a path component is not a directory",
        errno.EISDIR: "path is a directory",
        errno.ELOOP: "path changed to a symlink while it was being opened",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENOSPC: "no space left on the device",
        errno.EEXIST: "path already exists",
    }
    return EnvironmentOpError("error", messages.get(exc.errno or 0, "filesystem error"))
