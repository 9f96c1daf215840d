"""Private memory of a resident session's actor and of an idle actor, told apart from outside.

The benchmark does not ask Brain which process is what; it looks at /proc, so the measure stays
the same whether session actors are forked on demand or handed out from a pool:

- a **session process** is a process of the server's group that holds a file of one of the
  measured sessions open (a resident session actor keeps its journal open);
- an **idle actor** is a sibling of a session process (same parent, the actor that creates
  session actors) that holds no file of any session: a pooled actor waiting for a session. A
  server that forks session actors on demand has none. (Were session actors children of the
  actor system's root, its other children would be counted here too; today the registry is
  their parent.)

USS (Private_Clean + Private_Dirty) is what the process alone costs; the PSS delta of the whole
group per session is shown beside it, since forks share pages that USS leaves out.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain.procstat import read_stat
from tests.support.server import BrainServer, group_pids
from tools.bench.common import pss_kib, uss_kib


def parent_pid(pid: int) -> int | None:
    try:
        return read_stat(pid).ppid
    except OSError:
        return None


def open_paths(pid: int) -> list[str]:
    """Targets of the process's open file descriptors (empty if it is gone)."""
    paths = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    for fd in fds:
        try:
            paths.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    return paths


def holds_files_under(pid: int, dirs: list[Path]) -> bool:
    roots = tuple(str(d) + os.sep for d in dirs)
    return any(path.startswith(roots) for path in open_paths(pid))


@dataclass
class ActorMemory:
    sessions: int
    session_uss_kib: list[int]  # one per session process found
    idle_uss_kib: list[int]  # one per idle actor found
    pss_per_session_kib: float  # whole group's PSS delta / sessions

    @staticmethod
    def median_mib(values: list[int]) -> float | None:
        return statistics.median(values) / 1024 if values else None


def measure(server: BrainServer, sessions: int, settle_secs: float = 1.0,
            **create: Any) -> ActorMemory:
    """Create `sessions` resident sessions (`idle_ttl_ms` 0), one turn each, then classify."""
    assert server.proc is not None
    pgid = server.proc.pid
    time.sleep(settle_secs)
    pss_before = sum(pss_kib(pid) for pid in group_pids(pgid))
    session_dirs = []
    for _ in range(sessions):
        sid = server.create_session(idle_ttl_ms=0, **create)["id"]
        session_dirs.append(server.data_dir / "sessions" / sid)
        result = server.send(sid, "hello")
        if result["status"] != "ended":
            raise RuntimeError(f"turn did not end: {result}")
    time.sleep(settle_secs)
    pids = group_pids(pgid)
    pss_after = sum(pss_kib(pid) for pid in pids)
    holders = [pid for pid in pids if holds_files_under(pid, session_dirs)]
    all_sessions = [server.data_dir / "sessions"]  # sessions resident before count as busy
    parents = {parent_pid(pid) for pid in holders} - {None}
    idle = [pid for pid in pids if parent_pid(pid) in parents and pid not in holders
            and not holds_files_under(pid, all_sessions)]
    return ActorMemory(sessions, [uss_kib(pid) for pid in holders],
                       [uss_kib(pid) for pid in idle], (pss_after - pss_before) / sessions)
