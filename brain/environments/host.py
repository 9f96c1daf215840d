"""A `host` Environment: every op is performed by a client process that serves it.

Brain holds no state for it. Each op, lifecycle (setup, detach, teardown) or Tool-routed (exec,
read, write), becomes one host call through the `HostRunner` the executor passes in; what the
host answers is the op's result or failure. Which host serves it, and how a call finds one, is
the executor's business (docs/host-tools.md), so this stays a pure library.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from brain.effects import FAILURES, EffectFailed
from brain.environments.errors import EnvironmentOpError

HostRunner = Callable[[str, str, str | None, Any, float | None, threading.Event], dict[str, Any]]
"""`(kind, name, op, payload, deadline, cancel) -> answer`: one call performed by a host.

`kind` is "tool" (payload: the Tool input; op None) or "environment" (payload: the op's
request). The answer is the host's, normalized: `{content, is_error, events, outcome}` for a
Tool, `{result}` or `{error: {message, outcome}}` for an op. When there is no usable answer it
raises an EffectFailed (brain.effects) carrying what Brain knows."""


class HostEnvironment:
    """The Environment `name`, whose ops a host performs through `runner`."""

    kind = "host"

    def __init__(self, name: str, runner: HostRunner) -> None:
        self.name = name
        self.runner = runner

    def run(self, op: str, request: dict[str, Any], deadline: float | None,
            cancel: threading.Event) -> dict[str, Any]:
        """One op, sent once: its result, or EnvironmentOpError with what Brain knows."""
        try:
            answer = self.runner("environment", self.name, op, request, deadline, cancel)
        except EffectFailed as exc:
            raise EnvironmentOpError(exc.outcome, exc.message) from None
        except Exception:
            raise EnvironmentOpError("unknown", f"{op} on the host ended abnormally") from None
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict):
            outcome = error.get("outcome", "error")
            raise EnvironmentOpError(outcome if outcome in FAILURES else "unknown",
                                     str(error.get("message", "")))
        result = answer.get("result") if isinstance(answer, dict) else None
        if not isinstance(result, dict):
            # The host answered something unusable: it may still have acted.
            raise EnvironmentOpError("unknown", f"the host's answer to {op} was malformed")
        return result
