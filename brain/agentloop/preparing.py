"""What a starting Brain is still preparing, for /readyz: a small status file.

`brain serve` compiles the configured Agentloop components in a background process
(precompile.py) while the rest of the server starts, so /healthz answers at once. That process
keeps `run/preparing.json` in the data dir listing what it has still to compile, as
`{"pid": ..., "preparing": ["compiling Agentloop NAME (SIZE)", ...]}`, and removes it when done.
/readyz reads it: while the process lives and lists something, the server is not ready and
says what it waits for. A file left by a process that died is ignored. The file is rewritten
whole (a rename), never fsynced: it means nothing after a restart.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

STATUS_NAME = "preparing.json"


def status_path(run_dir: Path) -> Path:
    return run_dir / STATUS_NAME


def write_status(path: Path, compiling: list[str]) -> None:
    """List `compiling` (component paths) in `path`, under this process's pid."""
    lines = []
    for item in compiling:
        try:
            size = f"{os.stat(item).st_size / 1e6:.1f} MB"
        except OSError:
            size = "unreadable"
        lines.append(f"compiling Agentloop {Path(item).name} ({size})")
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    temp.write_text(json.dumps({"pid": os.getpid(), "preparing": lines}))
    os.replace(temp, path)


def clear_status(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def still_preparing(path: Path) -> list[str]:
    """What the process that keeps `path` is still preparing; [] when nothing (no file, or
    its process is gone)."""
    try:
        status = json.loads(path.read_text())
        pid = int(status["pid"])
        preparing = [str(line) for line in status["preparing"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return preparing if preparing and _alive(pid) else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    try:  # a zombie (exited, not yet reaped) prepares nothing
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True
