"""prometheus_client's multiprocess directory for gunicorn's workers (brain/web/prometheus.py).

The directory is not under the data dir: prometheus_client keeps each worker's values in
memory-mapped files that grow as new label sets appear, and growing one on a full filesystem
kills the worker with SIGBUS. A full data disk must cost commits (which fail cleanly), never
the web tier that reports it, so the files live in shared memory (`/dev/shm`, else the system
temp dir), named by the data dir so that two Brains on one machine never mix their counts.

Kept apart from prometheus_client: the master, which names the directory, must not import it
first, since it chooses its value class (multiprocess or not) when first imported, and the
workers it forks would inherit the wrong one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiproc_dir(data_path: Path) -> Path:
    """This data dir's directory of metric files, outside the data dir's filesystem."""
    base = Path("/dev/shm")
    if not (base.is_dir() and os.access(base, os.W_OK | os.X_OK)):
        base = Path(tempfile.gettempdir())
    key = hashlib.sha256(str(data_path.resolve()).encode()).hexdigest()[:16]
    return base / f"brain-prometheus-{os.getuid()}-{key}"


def prepare_multiproc_dir(path: Path) -> None:
    """An empty directory for this server's run: files of an earlier run would count again."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)


def mark_worker_dead(pid: int) -> None:
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
