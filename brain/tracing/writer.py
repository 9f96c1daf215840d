"""The trace file's writer: buffered whole lines, one O_APPEND write() per batch.

Many processes (the actor system's and every web worker's) append to one file. Each batch is a
run of whole lines handed to a single `os.write` on an O_APPEND descriptor, so the kernel places
it at the end of the file in one piece and no line is ever interleaved with another process's.
The buffer is flushed by a daemon thread at most `FLUSH_SECS` after its first line, and at exit;
nothing is opened per line. With BRAIN_TRACE unset, `tracer()` is None and callers do nothing.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any

FLUSH_SECS = 0.1

_UNSET = object()
_tracer: Any = _UNSET


class TraceWriter:
    def __init__(self, path: str, everything: bool) -> None:
        self.path = path
        self.everything = everything  # BRAIN_TRACE_ALL: housekeeping messages too
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._lock = threading.Lock()
        self._lines: list[dict[str, Any]] = []
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def write(self, line: dict[str, Any]) -> None:
        """Stamp the line with both clocks and queue it; the flusher writes it within 100 ms.

        Only the clocks are read here, on the actor's path; the flusher thread formats and
        serializes the batch.
        """
        line["t_us"] = time.monotonic_ns() // 1000
        line["wall"] = time.time()
        line["pid"] = self._pid
        with self._lock:
            self._lines.append(line)
            first = len(self._lines) == 1
        if first:
            self._ensure_flusher()
            self._wake.set()

    def flush(self) -> None:
        with self._lock:
            batch, self._lines = self._lines, []
        if batch:
            data = "".join(_text(line) for line in batch).encode()
            try:
                while data:  # a regular file takes it whole; the loop is for a signal's cut
                    data = data[os.write(self._fd, data):]
            except OSError:
                pass  # tracing never takes Brain down

    def _ensure_flusher(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._flush_loop, name="brain-trace",
                                        daemon=True)
        self._thread.start()

    def _flush_loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            time.sleep(FLUSH_SECS)
            self.flush()

    def _after_fork_in_child(self) -> None:
        """A fork copies the parent's unwritten lines; they are the parent's to write."""
        self._lock = threading.Lock()
        self._lines = []
        self._wake = threading.Event()
        self._thread = None
        self._pid = os.getpid()


def _text(line: dict[str, Any]) -> str:
    line["wall"] = datetime.fromtimestamp(line["wall"], UTC).isoformat(timespec="microseconds")
    return json.dumps(line, default=str, separators=(",", ":")) + "\n"


def tracer() -> TraceWriter | None:
    """This process's trace writer, made on first use; None when BRAIN_TRACE is unset."""
    global _tracer
    if _tracer is _UNSET:
        path = os.environ.get("BRAIN_TRACE")
        try:
            _tracer = TraceWriter(path, _everything()) if path else None
        except OSError as exc:  # tracing never takes Brain down: say so once, trace nothing
            print(f"brain: BRAIN_TRACE={path}: {exc.strerror}; not tracing", file=sys.stderr,
                  flush=True)
            _tracer = None
        if _tracer is not None:
            atexit.register(_tracer.flush)
            os.register_at_fork(after_in_child=_tracer._after_fork_in_child)
    return _tracer


def _everything() -> bool:
    """BRAIN_TRACE_ALL, read as brain/settings.py reads it."""
    return os.environ.get("BRAIN_TRACE_ALL", "").strip().lower() in ("1", "true", "yes", "on")


def flush() -> None:
    """Write out what is buffered now (an actor about to exit)."""
    if isinstance(_tracer, TraceWriter):
        _tracer.flush()
