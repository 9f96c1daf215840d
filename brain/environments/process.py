"""Run one command for an Environment `exec` op and collect its output, within bounds.

Everything happens in one thread around one `poll` loop: feeding stdin, draining stdout and
stderr (keeping at most a limit of each and discarding the rest, so a chatty child never blocks),
and watching for exit, cancellation and the deadline. The child gets its own session and so its
own process group; whenever the op ends, the whole group is killed with SIGKILL. On a deadline or
a cancel that is the point; after a normal exit it means an `exec` never leaves background
processes behind to hold the pipes open or outlive the op.

The child's environment is built from nothing: PATH, HOME (the Environment root) and LANG only.
The server's own variables, API keys among them, never reach it.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brain.environments.deadline import Deadline
from brain.environments.errors import EnvironmentOpError
from brain.procstat import all_stats

CHILD_PATH = "/usr/bin:/bin"
READ_BYTES = 64 << 10
DRAIN_GRACE_S = 1.0
"""After the command exits, how long to wait for pipes held by processes that left its group."""
GROUP_DEATH_S = 1.0
"""How long to wait for SIGKILLed group members to die before reporting the op's end."""


def child_environment(root: Path) -> dict[str, str]:
    """The complete environment of a command run in `root`."""
    return {"PATH": CHILD_PATH, "HOME": str(root), "LANG": "C.UTF-8"}


@dataclass
class _Capture:
    """The kept prefix of one output stream."""

    limit: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        self.data += chunk

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def run_command(
    argv: list[str],
    root: Path,
    stdin: bytes | None,
    deadline: Deadline,
    cancel: threading.Event,
    output_limit: int,
) -> dict[str, Any]:
    """Run `argv` in `root`; return `{exit_code, stdout, stderr, truncated}` or raise."""
    try:
        proc = subprocess.Popen(
            argv,
            cwd=root,
            env=child_environment(root),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except FileNotFoundError:
        raise EnvironmentOpError("error", f"command not found: {argv[0]}") from None
    except PermissionError:
        raise EnvironmentOpError("error", f"permission denied: {argv[0]}") from None
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, "OSError")
        raise EnvironmentOpError("error", f"cannot start {argv[0]} ({name})") from None
    out, err = _Capture(output_limit), _Capture(output_limit)
    try:
        stopped = _supervise(proc, stdin, out, err, deadline, cancel)
    finally:
        _kill_group(proc.pid)
        proc.wait()
        _await_group_death(proc.pid)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    if stopped == "timeout":
        raise EnvironmentOpError("timeout", "command timed out and was killed")
    if stopped == "cancelled":
        raise EnvironmentOpError("cancelled", "command cancelled and was killed")
    return {
        "exit_code": proc.returncode,
        "stdout": out.text(),
        "stderr": err.text(),
        "truncated": out.truncated or err.truncated,
    }


def _supervise(
    proc: subprocess.Popen,
    stdin: bytes | None,
    out: _Capture,
    err: _Capture,
    deadline: Deadline,
    cancel: threading.Event,
) -> str | None:
    """Pump pipes until the command is done; return "timeout"/"cancelled" if it was stopped."""
    poller = select.poll()
    sinks: dict[int, _Capture] = {}
    for pipe, capture in ((proc.stdout, out), (proc.stderr, err)):
        assert pipe is not None
        os.set_blocking(pipe.fileno(), False)
        poller.register(pipe.fileno(), select.POLLIN)
        sinks[pipe.fileno()] = capture
    pending = memoryview(stdin or b"")
    stdin_fd = -1
    if proc.stdin is not None:
        stdin_fd = proc.stdin.fileno()
        os.set_blocking(stdin_fd, False)
        poller.register(stdin_fd, select.POLLOUT)
    drain_until: Deadline | None = None
    while True:
        if cancel.is_set():
            return "cancelled"
        if deadline.expired():
            return "timeout"
        if drain_until is None and _has_exited(proc.pid):
            # The leader is a zombie until reaped, so its pid (the group id) cannot be reused.
            _kill_group(proc.pid)
            drain_until = Deadline.earliest(None, DRAIN_GRACE_S)
        if drain_until is not None and (not sinks or drain_until.expired()):
            return None
        for fd, _ in poller.poll(deadline.poll_interval() * 1000):
            if fd == stdin_fd:
                pending = _feed(fd, pending)
                if not pending:
                    poller.unregister(fd)
                    proc.stdin.close()  # type: ignore[union-attr]
                    stdin_fd = -1
                continue
            try:
                chunk = os.read(fd, READ_BYTES)
            except BlockingIOError:
                continue
            if chunk:
                sinks[fd].add(chunk)
            else:
                poller.unregister(fd)
                del sinks[fd]


def _feed(fd: int, pending: memoryview) -> memoryview:
    """Write what the pipe takes; a child that stops reading simply gets no more input."""
    try:
        return pending[os.write(fd, pending) :]
    except BlockingIOError:
        return pending
    except OSError:
        return pending[len(pending) :]


def _has_exited(pid: int) -> bool:
    """Whether the command has exited, without reaping it (WNOWAIT)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _await_group_death(pgid: int) -> None:
    """Wait (bounded) until no member of the group is still running.

    SIGKILL takes effect when the target is next scheduled, so without this an op could report
    "killed" while a member is still briefly alive. Members that are already zombies count as
    dead: reaping orphans is init's job, not ours.
    """
    until = Deadline.earliest(None, GROUP_DEATH_S)
    while not until.expired():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        if not _running_members(pgid):
            return
        time.sleep(0.01)


def _running_members(pgid: int) -> bool:
    return any(proc.pgrp == pgid and proc.running for proc in all_stats())
