"""A power cut over one directory tree, as a file system that keeps only what was fsynced.

`PowerLoss(root, mode)` watches every `os.fsync` and `os.fdatasync` Python code makes on a file
or directory under `root` and records, at that moment, what the call made durable:

- a file: its bytes (by inode, so a later rename or link keeps them);
- a directory: its entries (name -> inode), every entry as it is at the fsync.

`cut()` then rebuilds `root` from that record alone, as the disk would read after power returns:
a directory holds only the entries of its last fsync (an entry never fsynced is gone, and with
it everything below); a file holds the bytes of its last fsync (none when it never had one).
Whatever existed when the watch began counts as durable.

Two modes, because file systems differ on the one point Brain must not count on:

- `STRICT`: POSIX as written. A name (a file made, a directory made, a rename) is durable only
  once its parent directory was fsynced.
- `NAME_WITH_FILE`: an fsync of a file or directory also makes durable its own name and the
  names of the directories above it (ext4's default journal happens to do this), but not its
  siblings' names.

Nothing is intercepted but the two sync calls: writes, renames and mkdirs are found by looking
at the tree when a sync happens. Syncs made by C code (SQLite, wasmtime) are not seen, so their
files count as never synced; keep such files out of a tree under test, or expect them lost.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

STRICT = "strict POSIX"
NAME_WITH_FILE = "fsync of a file persists its name"
MODES = (STRICT, NAME_WITH_FILE)


@dataclass
class _Durable:
    """What the disk would read back: file bytes and directory entries, by inode."""

    files: dict[int, tuple[bytes, int]] = field(default_factory=dict)  # ino -> (bytes, mode)
    dirs: dict[int, tuple[dict[str, int], int]] = field(default_factory=dict)  # ino -> entries
    kinds: dict[int, str] = field(default_factory=dict)  # ino -> "file" | "dir"


class PowerLoss:
    """Watch `root` (which must exist) from `__enter__`; `cut()` keeps only what is durable."""

    def __init__(self, root: Path, mode: str = STRICT) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.root = Path(os.path.realpath(root))
        self.mode = mode
        self.syncs = 0  # syncs seen under root (a test can check the watch saw anything)
        self._durable = _Durable()
        self._patch = pytest.MonkeyPatch()

    def __enter__(self) -> PowerLoss:
        self._snapshot_everything()
        real_fsync, real_fdatasync = os.fsync, os.fdatasync
        self._patch.setattr(os, "fsync", self._watching(real_fsync))
        self._patch.setattr(os, "fdatasync", self._watching(real_fdatasync))
        return self

    def __exit__(self, *exc: object) -> None:
        self._patch.undo()

    # -- recording ---------------------------------------------------------------------------

    def _watching(self, real: Callable[[Any], None]) -> Callable[[Any], None]:
        def sync(fd: Any) -> None:
            real(fd)
            number = fd if isinstance(fd, int) else fd.fileno()
            self._synced(number)

        return sync

    def _synced(self, fd: int) -> None:
        try:
            path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return
        if not self._under_root(path):
            return
        self.syncs += 1
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            self._record_dir(path, info)
        elif stat.S_ISREG(info.st_mode):
            with open(f"/proc/self/fd/{fd}", "rb") as again:  # the fd may be write-only
                self._durable.files[info.st_ino] = (again.read(), stat.S_IMODE(info.st_mode))
            self._durable.kinds[info.st_ino] = "file"
        if self.mode == NAME_WITH_FILE:
            self._record_names_above(path)

    def _record_dir(self, path: Path, info: os.stat_result) -> None:
        entries = {}
        for entry in os.scandir(path):
            child = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(child.st_mode) or stat.S_ISREG(child.st_mode):
                entries[entry.name] = child.st_ino
                self._durable.kinds.setdefault(child.st_ino,
                                               "dir" if stat.S_ISDIR(child.st_mode) else "file")
        self._durable.dirs[info.st_ino] = (entries, stat.S_IMODE(info.st_mode))
        self._durable.kinds[info.st_ino] = "dir"

    def _record_names_above(self, path: Path) -> None:
        """NAME_WITH_FILE: `path`'s own entry and those of the directories above it."""
        while path != self.root:
            parent = path.parent
            parent_info, info = os.stat(parent), os.stat(path)
            entries, mode = self._durable.dirs.get(parent_info.st_ino,
                                                   ({}, stat.S_IMODE(parent_info.st_mode)))
            entries = {**entries, path.name: info.st_ino}
            self._durable.dirs[parent_info.st_ino] = (entries, mode)
            self._durable.kinds[parent_info.st_ino] = "dir"
            self._durable.kinds[info.st_ino] = "dir" if stat.S_ISDIR(info.st_mode) else "file"
            path = parent

    def _snapshot_everything(self) -> None:
        for directory, _, files in os.walk(self.root):
            self._record_dir(Path(directory), os.stat(directory))
            for name in files:
                path = Path(directory) / name
                info = os.stat(path, follow_symlinks=False)
                if stat.S_ISREG(info.st_mode):
                    self._durable.files[info.st_ino] = (path.read_bytes(),
                                                        stat.S_IMODE(info.st_mode))

    def _under_root(self, path: Path) -> bool:
        return path == self.root or self.root in path.parents

    # -- the cut -----------------------------------------------------------------------------

    def cut(self) -> None:
        """Power is lost and comes back: `root` holds only what was durable."""
        root_ino = os.stat(self.root).st_ino
        entries, _ = self._durable.dirs.get(root_ino, ({}, 0o700))
        for name in os.listdir(self.root):
            victim = self.root / name
            if victim.is_dir() and not victim.is_symlink():
                shutil.rmtree(victim)
            else:
                victim.unlink()
        self._rebuild(self.root, entries, seen={root_ino})
        self._snapshot_everything_after_cut()

    def _rebuild(self, directory: Path, entries: dict[str, int], seen: set[int]) -> None:
        for name, ino in entries.items():
            path = directory / name
            if self._durable.kinds.get(ino) == "dir":
                if ino in seen:
                    continue
                children, mode = self._durable.dirs.get(ino, ({}, 0o700))
                path.mkdir()
                self._rebuild(path, children, seen | {ino})
                path.chmod(mode)
            else:
                data, mode = self._durable.files.get(ino, (b"", 0o600))
                path.write_bytes(data)
                path.chmod(mode)

    def _snapshot_everything_after_cut(self) -> None:
        """The rebuilt tree is what is on disk now: new inodes, all of them durable."""
        self._durable = _Durable()
        self._snapshot_everything()

    # -- what a test asks --------------------------------------------------------------------

    def durable_names(self) -> set[str]:
        """Every path under root (relative, '/'-separated) that a cut now would keep."""
        names: set[str] = set()

        def walk(ino: int, prefix: str, seen: set[int]) -> None:
            entries, _ = self._durable.dirs.get(ino, ({}, 0))
            for name, child in entries.items():
                names.add(prefix + name)
                if self._durable.kinds.get(child) == "dir" and child not in seen:
                    walk(child, prefix + name + "/", seen | {child})

        root_ino = os.stat(self.root).st_ino
        walk(root_ino, "", {root_ino})
        return names
