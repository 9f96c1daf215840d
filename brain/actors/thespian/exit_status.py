"""How an actor's process ended, in words, from a ChildActorExited (brain/actors/thespian_exits)."""

from __future__ import annotations

import signal
from typing import Any


def exit_status(exited: Any) -> str:
    """`pid 123, killed by SIGKILL`, `pid 123, exit code 1`, or what of it is known."""
    pid = getattr(exited, "pid", None)
    code = getattr(exited, "exitcode", None)
    where = f"pid {pid}" if pid is not None else "pid unknown"
    if code is None:
        return f"{where}, exit status unknown"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"{where}, killed by {name}"
    return f"{where}, exit code {code}"
