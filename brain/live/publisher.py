"""The sending side: session actors and the model executor announce to every web worker.

Each web worker binds one Unix datagram socket in `$BRAIN_DATA_DIR/run/live/`. A publisher
sends small JSON datagrams to all of them without blocking: a worker whose buffer is full just
misses a hint and catches up from the journal, so no sender ever waits on a slow reader.

A publisher lives as long as its process (the model executor's, for the whole server), while
workers come and go: the first worker answers before the others have bound their sockets, and
gunicorn replaces a worker that dies. So the list of sockets is read again whenever the
directory changed (one `stat` per message) and at least every second. A list kept for a fixed
time missed a worker that bound just after a scan: its SSE followers lost that turn's model
deltas, which are live only and never come back from the journal.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

RESCAN_SECS = 1.0
MAX_DELTA_BYTES = 16 * 1024


def live_dir(data_dir: Path) -> Path:
    return data_dir / "run" / "live"


class LivePublisher:
    def __init__(self, data_dir: Path) -> None:
        self._dir = live_dir(data_dir)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._targets: list[str] = []
        self._scanned_at = 0.0
        self._dir_changed_at: int | None = None  # the directory's mtime at the last scan
        self._lock = threading.Lock()  # executor threads publish deltas concurrently

    def _scan(self, force: bool = False) -> None:
        now = time.monotonic()
        try:
            changed_at: int | None = os.stat(self._dir).st_mtime_ns
        except OSError:
            changed_at = None
        if (not force and changed_at == self._dir_changed_at
                and now - self._scanned_at < RESCAN_SECS):
            return
        self._scanned_at = now
        self._dir_changed_at = changed_at
        try:
            self._targets = [str(p) for p in self._dir.glob("*.sock")]
        except OSError:
            self._targets = []

    def _broadcast(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":")).encode()
        with self._lock:
            self._send_all(data)

    def _send_all(self, data: bytes) -> None:
        self._scan()
        stale = False
        for target in self._targets:
            try:
                self._sock.sendto(data, target)
            except (BlockingIOError, InterruptedError):
                pass  # that worker is behind; it catches up from the journal
            except (FileNotFoundError, ConnectionRefusedError):
                stale = True
                _remove_stale(target)
            except OSError as exc:
                log.debug("live hint to %s failed: %s", target, exc)
        if stale:
            self._scan(force=True)

    def committed(self, session_id: str, sequence: int) -> None:
        self._broadcast({"s": session_id, "q": sequence})

    def model_delta(self, session_id: str, started: int, delta: str) -> None:
        for start in range(0, len(delta), MAX_DELTA_BYTES):
            self._broadcast({"s": session_id, "d": {"started": started,
                                                    "delta": delta[start:start + MAX_DELTA_BYTES]}})

    def close(self) -> None:
        self._sock.close()


def _remove_stale(target: str) -> None:
    # A worker that died left its socket file; nobody reads it any more.
    try:
        os.unlink(target)
    except OSError:
        pass
