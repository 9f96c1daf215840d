"""Directory entries that survive a power cut: making directories, and naming files in them.

A file's bytes are durable after an fsync of the file. Its *name* is a change to the directory
that holds it, and under strict POSIX that change is durable only after an fsync of that
directory; a directory just made is likewise only an entry in its parent. Without those fsyncs a
power cut can take a data dir made seconds earlier away whole, with every journal below it,
although each journal's own fsyncs succeeded. (ext4 in its default mode happens to commit the
names along with a file's fsync; Brain does not count on it.)

Every directory Brain keeps under the data dir, the data dir itself included, is made here, and
every file published by a rename is published here. The journal library uses the same helpers,
so this module imports nothing of Brain's but `brain.fds`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from brain.fds import close_fd

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make the entries of directory `path` (names made, renamed or removed in it) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        close_fd(fd)


def make_dirs_durable(path: str | os.PathLike[str], mode: int = PRIVATE_DIR_MODE,
                      parents: bool = True) -> list[Path]:
    """`mkdir -p path` whose result survives a power cut; the directories it made, outermost
    first (empty when `path` already existed, and then nothing is fsynced).

    The parent of every directory made is fsynced after the mkdir, and so is the parent of the
    first directory that already existed: that one may itself have been made by a plain mkdir
    (an older Brain, an operator's script) whose entry was never made durable, and a directory
    made under it is lost with it. `mode` is the mode of the directories made (the process
    umask still applies; Brain's entry points set 077, brain/data_dir.py). With
    `parents=False` a missing parent is FileNotFoundError, as for `mkdir`, and nothing is made.
    """
    target = Path(os.path.abspath(path))
    missing = []
    probe = target
    while not probe.is_dir():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    if len(missing) > 1 and not parents:
        raise FileNotFoundError(f"{target.parent} does not exist")
    made = []
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=mode)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue  # another process made it meanwhile: it fsyncs its own parent
        made.append(directory)
        fsync_dir(directory.parent)
    if made:
        existing = made[0].parent
        if existing.parent != existing:
            fsync_dir(existing.parent)
    return made


def sync_new_name(path: str | os.PathLike[str]) -> None:
    """Make the name of file `path` durable, after the file's own fsync and its rename."""
    fsync_dir(Path(path).parent)


def replace_durably(path: str | os.PathLike[str], data: bytes,
                    mode: int = PRIVATE_FILE_MODE) -> None:
    """Replace file `path` with `data`: a private temporary in the same directory, fsynced,
    renamed over `path`, and the directory fsynced. After a crash `path` holds the old bytes or
    the new ones, never part of either, and never an empty file under the new name."""
    target = Path(path)
    temp = synced_temporary(target.parent, data, mode, prefix=f".{target.name}.")
    try:
        os.replace(temp, target)
    except BaseException:
        os.unlink(temp)
        raise
    sync_new_name(target)


def create_durably(path: str | os.PathLike[str], data: bytes,
                   mode: int = PRIVATE_FILE_MODE) -> bool:
    """Give `data` the name `path` unless that name exists; whether this call made it. The
    file is complete before it has the name (written, fsynced, then linked), so a crash never
    leaves `path` empty or torn, and of two processes racing only one makes it."""
    target = Path(path)
    temp = synced_temporary(target.parent, data, mode, prefix=f".{target.name}.")
    try:
        os.link(temp, target)
    except FileExistsError:
        return False
    finally:
        os.unlink(temp)
    sync_new_name(target)
    return True


def synced_temporary(directory: str | os.PathLike[str], data: bytes,
                     mode: int = PRIVATE_FILE_MODE, prefix: str = ".tmp-",
                     suffix: str = ".tmp") -> str:
    """A new file in `directory` holding `data`, fsynced, under a private temporary name that
    the caller renames or links into place (and removes on failure)."""
    fd, temp = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=suffix)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        close_fd(fd)
        os.unlink(temp)
        raise
    close_fd(fd)
    return temp
