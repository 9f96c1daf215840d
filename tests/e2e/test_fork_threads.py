"""Every Brain process that forks has one thread, so no child inherits a lock held mid-use.

Brain forks a lot: the supervisor starts its children, the boot process forks the Thespian admin,
the admin and the registry fork actors, and the gunicorn master forks (and re-forks) workers. A
fork copies only the forking thread, so a lock that another thread held at that moment stays
locked in the child for good; Python 3.12+ says so with a DeprecationWarning ("This process is
multi-threaded, use of fork() may lead to deadlocks in the child"). The processes that do run
threads (executors, session actors, gunicorn workers) never fork.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import requests

from brain.procstat import read_stat
from tests.support.server import BrainServer, group_pids
from tests.support.waiting import wait_for

FORK_WARNING = "is multi-threaded, use of fork()"


def _parents(pids: list[int]) -> dict[int, int]:
    parents = {}
    for pid in pids:
        try:
            parents[pid] = read_stat(pid).ppid
        except OSError:
            continue
    return parents


def _threads(pid: int) -> list[str]:
    names = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/comm") as comm:
            names.append(comm.read().strip())
    return names


def _command(pid: int) -> str:
    """The command line of `pid`, or "" once it has gone (a worker killed a moment ago)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _gunicorn_workers(server: BrainServer) -> list[int]:
    parents = _parents(group_pids(server.proc.pid))
    return [pid for pid, parent in parents.items()
            if "gunicorn" in _command(pid) and parent in parents
            and "gunicorn" in _command(parent)]


def test_every_forking_process_is_single_threaded(tmp_path: Path) -> None:
    # `always`: every fork-with-threads warning of every Brain process reaches the server log.
    server = BrainServer(tmp_path / "data",
                         env={"PYTHONWARNINGS": "always::DeprecationWarning"}).start()
    try:
        # idle_ttl_ms=0 keeps the session actor, so the registry that forked it has a child.
        sid = server.create_session(idle_ttl_ms=0)["id"]
        assert server.send(sid, "start the actors")["status"] == "ended"

        supervisor = server.proc.pid
        parents = _parents(group_pids(supervisor))
        # The supervisor, its children (boot process, Thespian admin, gunicorn master; the admin
        # is the boot process's double-forked grandchild, adopted by the supervisor) and every
        # process with a child of its own (the registry, which forked the session actor).
        forkers = ({supervisor} | {pid for pid, parent in parents.items() if parent == supervisor}
                   | {parent for parent in parents.values() if parent in parents})
        assert len(forkers) >= 5, {pid: _command(pid) for pid in parents}
        threaded = {pid: (_command(pid), _threads(pid)) for pid in forkers
                    if len(_threads(pid)) > 1}
        assert threaded == {}, f"processes that fork but run threads: {threaded}"

        # The gunicorn master forks again whenever a worker dies: each new worker is a fork of
        # a process that must still have one thread.
        for _ in range(3):
            before = set(_gunicorn_workers(server))
            os.kill(min(before), signal.SIGKILL)
            wait_for(lambda before=before: len(set(_gunicorn_workers(server)) - before) >= 1,
                     timeout=30, what="a replacement gunicorn worker")
        wait_for(lambda: requests.get(server.url + "/readyz", timeout=5).status_code == 200,
                 timeout=30, what="readiness after the worker restarts")
        time.sleep(0.5)  # the last restart's log lines
        assert FORK_WARNING not in server.log(), server.log()
    finally:
        server.kill()
