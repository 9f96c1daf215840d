"""The process tree of `brain serve`, read from /proc: descendants, liveness, socket owners.

Linux only, like the rest of the supervisor (prctl). Nothing here sends a signal; the supervisor
decides what to do with what it reads.
"""

from __future__ import annotations

import os

from brain.procstat import ProcStat, all_stats, read_stat


def _stat(pid: int) -> ProcStat | None:
    try:
        return read_stat(pid)
    except OSError:
        return None


def descendants(root_pid: int) -> list[int]:
    """Every live descendant of root_pid (children before grandchildren)."""
    children: dict[int, list[int]] = {}
    for proc in all_stats():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found: list[int] = []
    frontier = [root_pid]
    while frontier:
        pid = frontier.pop(0)
        for child in children.get(pid, []):
            found.append(child)
            frontier.append(child)
    return found


def is_running(pid: int) -> bool:
    """True while pid exists and has not exited (a `<defunct>` process has exited)."""
    proc = _stat(pid)
    return proc is not None and proc.state != "Z"


def reap_adopted(own_children: set[int]) -> None:
    """Reap adopted orphans that exited, by pid, leaving our Popen children to Popen."""
    me = os.getpid()
    for pid in descendants(me):
        if pid in own_children:
            continue
        proc = _stat(pid)
        if proc is not None and proc.state == "Z" and proc.ppid == me:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _listening_inodes(port: int) -> set[int]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as rows:
                next(rows)
                for row in rows:
                    parts = row.split()
                    if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(int(parts[9]))
        except OSError:
            continue
    return inodes


def listening_process(port: int, candidates: list[int]) -> int | None:
    """Which of `candidates` listens on TCP `port`: the eldest holder if forks share it."""
    inodes = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    holders = []
    for pid in candidates:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    holders.append(pid)
                    break
            except OSError:
                continue
    for pid in holders:
        proc = _stat(pid)
        if proc is not None and proc.ppid not in holders:
            return pid
    return holders[0] if holders else None
