"""The sending side: session actors and the model executor announce to every web worker.

Each web worker binds one Unix datagram socket in `$BRAIN_DATA_DIR/run/live/`. A publisher
sends small JSON datagrams to all of them without blocking: a worker whose buffer is full just
misses a hint and catches up from the journal, so no sender ever waits on a slow reader.
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
        self._lock = threading.Lock()  # executor threads publish deltas concurrently

    def _scan(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._scanned_at < RESCAN_SECS:
            return
        self._scanned_at = now
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
