"""The sending side: session actors and the model executor hint the web workers that follow.

Each web worker binds one Unix datagram socket in `$BRAIN_DATA_DIR/run/live/`. While it has SSE
subscribers of a session, it also keeps a marker, `run/live/follow/<session>/<its socket name>`
(brain/live/followers.py). A publisher sends a session's hints only to the sockets its markers
name, without blocking: a worker whose buffer is full just misses a hint and catches up from the
journal, so no sender ever waits on a slow reader.

The markers are listed again for every hint, never cached: a worker that starts following
between two hints gets the second one. A subscriber marks its session before it reads the
journal, so a commit whose hint missed the new marker is one its catch-up read sees. A session
nobody follows, the common case, costs one failed directory listing per hint; sending every
hint to every worker, to be dropped where nobody follows, costs about a fifth of a web
worker's CPU per turn.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from pathlib import Path
from typing import Any

from brain.live.followers import follower_sockets, forget_follower, live_dir

log = logging.getLogger(__name__)

MAX_DELTA_BYTES = 16 * 1024


class LivePublisher:
    def __init__(self, data_dir: Path) -> None:
        self._dir = live_dir(data_dir)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._lock = threading.Lock()  # executor threads publish deltas concurrently

    def _send(self, session_id: str, message: dict[str, Any]) -> None:
        targets = follower_sockets(self._dir, session_id)
        if not targets:
            return
        data = json.dumps(message, separators=(",", ":")).encode()
        with self._lock:
            for name in targets:
                try:
                    self._sock.sendto(data, str(self._dir / name))
                except (BlockingIOError, InterruptedError):
                    pass  # that worker is behind; it catches up from the journal
                except (FileNotFoundError, ConnectionRefusedError):
                    forget_follower(self._dir, session_id, name)  # a worker that died
                except OSError as exc:
                    log.debug("live hint to %s failed: %s", name, exc)

    def committed(self, session_id: str, sequence: int) -> None:
        self._send(session_id, {"s": session_id, "q": sequence})

    def model_delta(self, session_id: str, started: int, delta: str) -> None:
        for start in range(0, len(delta), MAX_DELTA_BYTES):
            self._send(session_id, {"s": session_id, "d": {
                "started": started, "delta": delta[start:start + MAX_DELTA_BYTES]}})

    def tool_progress(self, session_id: str, started: int, progress: dict[str, Any]) -> None:
        """An MCP server's progress on the Tool call `started`: live only, never journaled."""
        self._send(session_id, {"s": session_id, "p": {"started": started, **progress}})

    def close(self) -> None:
        self._sock.close()
