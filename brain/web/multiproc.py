"""prometheus_client's multiprocess directory for gunicorn's workers (brain/web/prometheus.py).

Kept apart from prometheus_client: the master, which names the directory, must not import it
first, since it chooses its value class (multiprocess or not) when first imported, and the
workers it forks would inherit the wrong one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiproc_dir(data_path: Path) -> Path:
    return data_path / "run" / "prometheus"


def prepare_multiproc_dir(path: Path) -> None:
    """An empty directory for this server's run: files of an earlier run would count again."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)


def mark_worker_dead(pid: int) -> None:
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
