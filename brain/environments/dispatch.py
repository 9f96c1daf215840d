"""From a journaled op name and request to a method call on an Environment.

The executor actor calls `run_environment_op` after `environment_op_started` is committed and
journals what it returns or raises. Whatever goes wrong becomes EnvironmentOpError, with
`unknown` reserved for faults after an op with effects may have begun: Brain never claims an
effect did not happen unless it knows.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from brain.environments.deadline import Deadline
from brain.environments.errors import EnvironmentOpError
from brain.environments.host import HostEnvironment, HostRunner
from brain.environments.local import LocalEnvironment

OPS = ("setup", "exec", "read", "write", "detach", "teardown")
HOST_ENVIRONMENTS_MESSAGE = "no host dispatcher is available to this environment"

Environment = LocalEnvironment | HostEnvironment


def open_environment(spec: dict[str, Any], root: Path,
                     host_runner: HostRunner | None = None) -> Environment:
    """The Environment a `[environments.NAME]` table describes.

    A `local` one is rooted at `root`; a `host` one is performed by a client process through
    `host_runner`, and without a runner it is refused rather than silently run locally.
    """
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind == "local":
        return LocalEnvironment(root)
    if kind == "host":
        name = spec.get("name")
        if host_runner is None or not isinstance(name, str):
            raise EnvironmentOpError("error", HOST_ENVIRONMENTS_MESSAGE)
        return HostEnvironment(name, host_runner)
    raise EnvironmentOpError("error", f"unknown environment kind {kind!r}")


def run_environment_op(
    env: Environment,
    op: str,
    request: dict[str, Any],
    deadline: float | None,
    cancel: threading.Event,
) -> dict[str, Any]:
    """Run one op once and return its result, or raise EnvironmentOpError.

    `deadline` is a `time.time()` epoch or None; an op that is cancelled or out of time before
    it starts is not started.
    """
    if op not in OPS:
        raise EnvironmentOpError("error", f"unknown environment op {op!r}")
    if not isinstance(request, dict):
        raise EnvironmentOpError("error", "request must be an object")
    if cancel.is_set():
        raise EnvironmentOpError("cancelled", f"{op} cancelled before it started")
    if Deadline(deadline).expired():
        raise EnvironmentOpError("timeout", f"{op} deadline passed before it started")
    if isinstance(env, HostEnvironment):
        return env.run(op, request, deadline, cancel)  # each op is a remote call: deadline too
    try:
        if op == "exec":
            return env.exec(request, deadline, cancel)
        if op in ("read", "write"):
            return getattr(env, op)(request)
        return getattr(env, op)()
    except EnvironmentOpError:
        raise
    except Exception as exc:
        # A fault in Brain, not in the request. Reading has no effect, so it definitely failed;
        # any other op may have done part of its work.
        outcome = "error" if op == "read" else "unknown"
        raise EnvironmentOpError(outcome, f"{op} failed ({type(exc).__name__})") from None
