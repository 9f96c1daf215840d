"""The process tree of `brain serve`, read from /proc: descendants, liveness, socket owners.

Linux only, like the rest of the supervisor (prctl). Nothing here sends a signal; the supervisor
decides what to do with what it reads.
"""

from __future__ import annotations

import os
import socket
import struct

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


def direct_children() -> list[int] | None:
    """This process's children, as the kernel lists them per thread in
    /proc/self/task/<tid>/children; None where it does not (a kernel without
    CONFIG_PROC_CHILDREN)."""
    children: list[int] = []
    listed = False
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children") as listing:
                children.extend(int(pid) for pid in listing.read().split())
            listed = True
        except OSError:
            continue  # a thread that ended meanwhile, or no such file on this kernel
    return children if listed else None


def reap_adopted(own_children: set[int]) -> None:
    """Reap adopted orphans that exited, by pid, leaving our Popen children to Popen.

    Called every few tenths of a second by the supervisor, so it reads its own children's
    list (a small file per thread) rather than the stat of every process on the machine; a
    child that is still running is left alone by `WNOHANG`."""
    children = direct_children()
    if children is None:  # no children list: find the exited ones among all processes
        me = os.getpid()
        children = [proc.pid for proc in all_stats() if proc.ppid == me and proc.state == "Z"]
    for pid in children:
        if pid in own_children:
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


LISTEN_STATE = "0A"


def _listening_table(table: str) -> dict[int, tuple[str, int]]:
    """`{socket inode: (address, port)}` of the sockets listening in one /proc/net table."""
    found: dict[int, tuple[str, int]] = {}
    try:
        with open(table) as rows:
            next(rows)
            for row in rows:
                parts = row.split()
                if parts[3] != LISTEN_STATE:
                    continue
                hex_addr, hex_port = parts[1].split(":")
                if len(hex_addr) == 8:
                    address = socket.inet_ntoa(struct.pack("<I", int(hex_addr, 16)))
                else:  # IPv6: four little-endian 32-bit words
                    raw = bytes.fromhex(hex_addr)
                    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                    address = socket.inet_ntop(socket.AF_INET6, words)
                found[int(parts[9])] = (address, int(hex_port, 16))
    except OSError:
        pass
    return found


def listening_sockets(pids: list[int]) -> list[tuple[int, str, int]]:
    """`(pid, address, port)` for every TCP socket in LISTEN state that one of `pids` holds."""
    tables = {**_listening_table("/proc/net/tcp"), **_listening_table("/proc/net/tcp6")}
    result = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and int(target[8:-1]) in tables:
                result.append((pid, *tables[int(target[8:-1])]))
    return result


def listening_process(port: int, candidates: list[int]) -> int | None:
    """Which of `candidates` listens on TCP `port`: the eldest holder if forks share it."""
    holders = list(dict.fromkeys(
        pid for pid, _, listened in listening_sockets(candidates) if listened == port))
    for pid in holders:
        proc = _stat(pid)
        if proc is not None and proc.ppid not in holders:
            return pid
    return holders[0] if holders else None
