"""Compiled Agentloops kept on disk: stored whole with their own checksum, loaded only whole.

wasmtime's `deserialize_file` maps a stored artifact and runs the machine code in it without
checking a byte, and the file is found by the sha256 of the *source*, not of itself. So a
stored artifact must never be torn: a power cut after a rename whose file was not yet on disk
can leave the name with zeros or part of the bytes behind it, and a flipped bit on the disk
would be executed as it is.

Each artifact `NAME` is therefore written to a temporary file, fsynced, and renamed; beside it
`NAME.sum` holds its length and CRC32C (`<length> <crc32c as 8 hex digits>`), written the same
way; then the directory is fsynced. Before a load the artifact's bytes are read back and
checked against its `.sum` (about 1 ms per 10 MB, against a compile of seconds): a missing
`.sum`, a wrong length or a wrong checksum is logged, both files are removed, and the caller
compiles again. The CRC is no defence against someone who can write the cache directory (they
could write a matching `.sum` too); the directory is private to Brain's user for that.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import google_crc32c

from brain.durable_dirs import make_dirs_durable, sync_new_name, synced_temporary
from brain.journal.history import crc_of_file

log = logging.getLogger("brain.agentloop")

SUM_SUFFIX = ".sum"

Loaded = TypeVar("Loaded")


def sum_path(artifact: Path) -> Path:
    """Where the length and checksum of `artifact` are kept."""
    return artifact.with_name(artifact.name + SUM_SUFFIX)


def sum_text(data: bytes | bytearray) -> str:
    return f"{len(data)} {google_crc32c.value(bytes(data)):08x}\n"


def store_artifact(data: bytes | bytearray, cache_dir: Path, name: str) -> None:
    """Store serialized `data` as `cache_dir/name` with its checksum, both durable on return.

    Raises OSError; callers treat a cache that cannot be written as a compile next time."""
    make_dirs_durable(cache_dir)
    artifact = cache_dir / name
    temp_artifact = synced_temporary(cache_dir, data, suffix=".cwasm")
    try:
        temp_sum = synced_temporary(cache_dir, sum_text(data).encode("ascii"))
    except BaseException:
        os.unlink(temp_artifact)
        raise
    try:
        # The artifact first: a crash between the renames leaves an artifact whose `.sum` is
        # missing or another's, which is refused, never one that is trusted unchecked.
        os.replace(temp_artifact, artifact)
        os.replace(temp_sum, sum_path(artifact))
    except BaseException:
        for temp in (temp_artifact, temp_sum):
            _remove(Path(temp))
        raise
    sync_new_name(artifact)


def is_stored(path: Path) -> bool:
    """Whether `path` and its `.sum` are both there (not whether they match: see
    `why_not_whole`)."""
    return path.is_file() and sum_path(path).is_file()


def load_checked(path: Path, deserialize: Callable[[str], Loaded]) -> Loaded | None:
    """`deserialize(path)` when `path` is whole and matches its `.sum`; None when it is
    missing. A torn or mismatching artifact is logged and removed, and None returned, so the
    caller compiles and stores it again. Exceptions of `deserialize` are the caller's."""
    if not path.is_file():
        return None
    problem = why_not_whole(path)
    if problem is not None:
        log.warning("compiled Agentloop %s is not loaded: %s; it is removed and compiled again",
                    path, problem)
        discard(path)
        return None
    return deserialize(str(path))


def why_not_whole(path: Path) -> str | None:
    """Why the artifact at `path` must not be loaded, or None when it is whole."""
    try:
        recorded = sum_path(path).read_text(encoding="ascii").split()
        length, crc = int(recorded[0]), int(recorded[1], 16)
    except FileNotFoundError:
        return "it has no checksum file (written by an older Brain, or torn)"
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return "its checksum file is unreadable"
    try:
        size = os.stat(path).st_size
        found = crc_of_file(path, length) if size == length else None
    except OSError as exc:
        return f"it cannot be read ({exc.strerror})"
    if size != length:
        return f"it is {size} bytes long, its checksum file says {length}"
    if found != crc:
        return "its CRC32C does not match its checksum file"
    return None


def discard(path: Path) -> None:
    """Remove an artifact and its `.sum`; gone already is fine."""
    for victim in (path, sum_path(path)):
        _remove(victim)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass

