"""`run_tool`: send one Tool call down the route its configuration names, exactly once.

The session actor has already journaled `tool_call_started` when this runs, and journals what
this returns before the Agentloop sees it. So this function never raises for anything a Tool
does, never retries, and never reports `ok` for an answer it did not get. A call that is
cancelled or out of time before it starts is not sent at all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from brain.effects import EffectFailed
from brain.environments.deadline import Deadline
from brain.environments.host import HostRunner
from brain.tools.builtins import BUILTINS, Call
from brain.tools.http_route import call_http_tool
from brain.tools.outcome import ToolOutcome

EnvironmentRunner = Callable[[str, str, dict[str, Any], float | None, threading.Event], dict]
"""`(environment_name, op, request, deadline, cancel) -> result`; raises an EffectFailed
(brain.environments.EnvironmentOpError) when the op fails."""

TOOL_ENVIRONMENT_OPS = ("exec", "read", "write")
"""Ops a Tool may route to. Lifecycle ops (setup, detach, teardown) belong to the session."""

HOST_TOOLS_MESSAGE = "no host dispatcher is available to this tool call"

McpRunner = Callable[[dict[str, Any], Any, Deadline, threading.Event], ToolOutcome]
"""`(tool entry, input, deadline, cancel) -> outcome`: brain/tools/mcp/call.py bound to the
executor's connections and the session's credentials."""


def run_tool(
    tool: dict[str, Any],
    invocation: dict[str, Any],
    *,
    session_id: str,
    sequence: int,
    deadline: float | None,
    cancel: threading.Event,
    environment_runner: EnvironmentRunner | None = None,
    host_runner: HostRunner | None = None,
    mcp_runner: McpRunner | None = None,
) -> ToolOutcome:
    """Run one Tool call and say what came of it.

    `tool` is the resolved configuration recorded at session creation (`name`, `route`, and the
    route's target); `invocation` is `{"id", "input"}`; `sequence` is the `tool_call_started`
    record's; `deadline` is a `time.time()` epoch or None. Builtins and the environment route run
    in the calling thread.
    """
    until = Deadline(deadline)
    if not isinstance(invocation, dict) or "input" not in invocation:
        return ToolOutcome.failed("error", "invocation must be an object with id and input")
    if not isinstance(tool, dict):
        return ToolOutcome.failed("error", "tool configuration is not an object")
    if cancel.is_set():
        return ToolOutcome.failed("cancelled", "tool call cancelled before it started")
    if until.expired():
        return ToolOutcome.failed("timeout", "tool call deadline passed before it started")
    route = tool.get("route")
    if route == "builtin":
        return _run_builtin(tool, invocation["input"], until, cancel)
    if route == "http":
        payload = {
            "session_id": session_id,
            "sequence": sequence,
            "tool": tool.get("name"),
            "invocation": {"id": invocation.get("id"), "input": invocation["input"]},
            "deadline": deadline,
        }
        return call_http_tool(tool.get("url"), payload, until, cancel)
    if route == "environment":
        return _run_environment(tool, invocation["input"], deadline, cancel, environment_runner)
    if route == "host":
        return _run_host(tool, invocation["input"], deadline, cancel, host_runner)
    if route == "mcp":
        if mcp_runner is None:
            return ToolOutcome.failed("error", "no MCP connections are available to this call")
        try:
            return mcp_runner(tool, invocation["input"], until, cancel)
        except Exception:  # a fault in Brain after the call may have been sent
            return ToolOutcome.failed("unknown", "mcp tool call ended abnormally")
    return ToolOutcome.failed("error", f"unknown tool route {route!r}")


def _run_builtin(
    tool: dict[str, Any], value: Any, until: Deadline, cancel: threading.Event
) -> ToolOutcome:
    name = tool.get("function")
    builtin = BUILTINS.get(name) if isinstance(name, str) else None
    if builtin is None:
        return ToolOutcome.failed("error", f"no builtin tool function {name!r}")
    try:
        return builtin(value, Call(deadline=until, cancel=cancel))
    except Exception as exc:  # a builtin bug must become a result, not kill the executor
        return ToolOutcome.failed("error", f"builtin {name} failed ({type(exc).__name__})")


def _run_host(
    tool: dict[str, Any],
    value: Any,
    deadline: float | None,
    cancel: threading.Event,
    runner: HostRunner | None,
) -> ToolOutcome:
    """A client process performs the call; its answer counts like an http Tool's (outcome `ok`
    whatever `is_error` says), and the runner's failure carries what Brain knows."""
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        return ToolOutcome.failed("error", "host tool has no name")
    if runner is None:
        return ToolOutcome.failed("error", HOST_TOOLS_MESSAGE)
    try:
        answer = runner("tool", name, None, value, deadline, cancel)
    except Exception as exc:
        return _failure_of(exc, "host tool call ended abnormally")
    try:
        if answer.get("outcome") == "cancelled":
            return ToolOutcome(answer["content"], True, "cancelled", answer.get("events") or [])
        return ToolOutcome.ok(answer["content"], is_error=bool(answer.get("is_error")),
                              events=answer.get("events") or [])
    except (AttributeError, KeyError, TypeError, ValueError):
        # The host answered, but not in a shape the journal can take: it may have acted.
        return ToolOutcome.failed("unknown", "host tool answer was malformed")


def _failure_of(exc: Exception, abnormal: str) -> ToolOutcome:
    """A reported failure keeps its outcome and message; anything else is `unknown`."""
    if isinstance(exc, EffectFailed):
        return ToolOutcome.failed(exc.outcome, exc.message)
    # Not a reported failure but a fault in the runner: the call may already have run.
    return ToolOutcome.failed("unknown", abnormal)


def _run_environment(
    tool: dict[str, Any],
    value: Any,
    deadline: float | None,
    cancel: threading.Event,
    runner: EnvironmentRunner | None,
) -> ToolOutcome:
    environment, op = tool.get("environment"), tool.get("op")
    if not isinstance(environment, str) or not environment:
        return ToolOutcome.failed("error", "environment tool names no environment")
    if op not in TOOL_ENVIRONMENT_OPS:
        allowed = ", ".join(TOOL_ENVIRONMENT_OPS)
        return ToolOutcome.failed("error", f"environment tool op must be one of {allowed}")
    if runner is None:
        return ToolOutcome.failed("error", "no environment is available to this tool call")
    if not isinstance(value, dict):
        return ToolOutcome.failed("error", f"{op} input must be an object")
    try:
        result = runner(environment, op, value, deadline, cancel)
    except Exception as exc:
        return _failure_of(exc, f"environment {op} ended abnormally")
    return ToolOutcome.ok(result)
