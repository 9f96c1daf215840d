"""The admission board: the registry's backlog length, published for web workers to read.

A web worker admitting an async submit (brain/web/admission.py) must refuse when the backlog of
work waiting for a session actor is full, and must not ask the registry first: that would put
a round trip through the one actor every request passes in front of every 202. So the registry
writes its backlog length into a small shared file (`run/admission`, mapped in memory) each time
it changes, and a web worker reads it in a microsecond. It is a hint, read without a lock: a
burst can overshoot the bound by the requests in flight at once, never by more.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from brain.durable_dirs import make_dirs_durable
from brain.fds import close_fd

BOARD_NAME = "admission"
_LAYOUT = struct.Struct("<II")  # backlog sessions, sessions served by an actor


def board_path(data_dir: Path) -> Path:
    return data_dir / "run" / BOARD_NAME


class BoardWriter:
    """The registry's side; the file is made fresh at every start."""

    def __init__(self, data_dir: Path) -> None:
        path = board_path(data_dir)
        make_dirs_durable(path.parent)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, _LAYOUT.size)
            self._map = mmap.mmap(fd, _LAYOUT.size)
        finally:
            close_fd(fd)
        self._last: tuple[int, int] | None = None

    def publish(self, backlog: int, serving: int) -> None:
        if self._last != (backlog, serving):
            self._last = (backlog, serving)
            _LAYOUT.pack_into(self._map, 0, backlog, serving)


class BoardReader:
    """A web worker's side; (0, 0) until the registry has written the board."""

    def __init__(self, data_dir: Path) -> None:
        self._path = board_path(data_dir)
        self._map: mmap.mmap | None = None

    def read(self) -> tuple[int, int]:
        if self._map is None:
            try:
                fd = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return 0, 0
            try:
                if os.fstat(fd).st_size < _LAYOUT.size:
                    return 0, 0
                self._map = mmap.mmap(fd, _LAYOUT.size, prot=mmap.PROT_READ)
            finally:
                close_fd(fd)
        return _LAYOUT.unpack_from(self._map, 0)
