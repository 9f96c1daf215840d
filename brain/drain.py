"""The drain marker: while it exists the web admits no new work (503 `draining`).

A file rather than a signal to each worker, so every gunicorn worker sees the same state with
one stat() and a restart clears it explicitly.
"""

from __future__ import annotations

from pathlib import Path

from brain.durable_dirs import make_dirs_durable


def drain_marker(data_dir: Path) -> Path:
    return data_dir / "run" / "draining"


def start_draining(data_dir: Path) -> None:
    marker = drain_marker(data_dir)
    make_dirs_durable(marker.parent)
    marker.touch(mode=0o600)


def stop_draining(data_dir: Path) -> None:
    drain_marker(data_dir).unlink(missing_ok=True)


def is_draining(data_dir: Path) -> bool:
    return drain_marker(data_dir).exists()
