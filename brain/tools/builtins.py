"""The callables a `builtin` Tool can name with `function`.

Builtins run in the caller's thread and have no remote side, so their outcomes are always exact:
they either answer or definitely fail. `echo` is the shipped default Tool; `sleep`, `fail` and
`emit` exist so that tests and operators can exercise cancellation, deadlines, error results and
tool-origin Events end to end without writing a Tool server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from brain.environments.deadline import Deadline
from brain.tools.outcome import EventShapeError, ToolOutcome

MAX_SLEEP_S = 3600.0


@dataclass(frozen=True)
class Call:
    """What a builtin may look at besides its input."""

    deadline: Deadline
    cancel: threading.Event


Builtin = Callable[[Any, Call], ToolOutcome]


def echo(value: Any, call: Call) -> ToolOutcome:
    """Answer with the input, unchanged."""
    return ToolOutcome.ok(value)


def sleep(value: Any, call: Call) -> ToolOutcome:
    """Wait `seconds`, giving up at once when cancelled or past the deadline."""
    seconds = value.get("seconds") if isinstance(value, dict) else None
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return ToolOutcome.failed("error", "sleep needs a number `seconds`")
    if not 0 <= seconds <= MAX_SLEEP_S:
        return ToolOutcome.failed("error", f"seconds must be between 0 and {MAX_SLEEP_S:g}")
    until = Deadline.earliest(None, float(seconds))
    while not until.expired():
        if call.deadline.expired():
            return ToolOutcome.failed("timeout", "tool call timed out")
        # Event.wait wakes as soon as cancel is set, so the poll bounds only deadline checks.
        if call.cancel.wait(min(until.poll_interval(), call.deadline.poll_interval())):
            return ToolOutcome.failed("cancelled", "tool call cancelled")
    return ToolOutcome.ok({"slept": seconds})


def fail(value: Any, call: Call) -> ToolOutcome:
    """Always fail with outcome `error`, using `message` from the input when there is one."""
    message = value.get("message") if isinstance(value, dict) else None
    if not isinstance(message, str) or not message:
        message = "failed as asked"
    return ToolOutcome.failed("error", message)


def emit(value: Any, call: Call) -> ToolOutcome:
    """Ask for the Events in `input.events`; answer with `input.content` or a count."""
    if not isinstance(value, dict) or "events" not in value:
        return ToolOutcome.failed("error", "emit needs `events`: a list of {kind, data}")
    events = value["events"]
    content = value.get("content", {"emitted": len(events) if isinstance(events, list) else 0})
    try:
        return ToolOutcome.ok(content, events=events)
    except EventShapeError as exc:
        return ToolOutcome.failed("error", str(exc))


BUILTINS: dict[str, Builtin] = {"echo": echo, "sleep": sleep, "fail": fail, "emit": emit}

INSTANT_BUILTINS = frozenset({"echo", "fail", "emit"})
"""Builtins that answer at once (no wait, no I/O): the Tool executor runs them on its own
thread instead of a worker thread."""
