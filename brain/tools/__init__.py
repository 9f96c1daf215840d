"""Tool execution: run one Tool call down its configured route and report an exact outcome.

This is the pure layer under the executor actor: no actors, no journal, no settings. See
docs/tools-and-environments.md for routes, the http wire format and the outcome table.
"""

from brain.tools.builtins import BUILTINS
from brain.tools.outcome import EventShapeError, ToolOutcome, check_events
from brain.tools.run import (
    HOST_TOOLS_MESSAGE,
    TOOL_ENVIRONMENT_OPS,
    EnvironmentRunner,
    HostRunner,
    run_tool,
)

__all__ = [
    "BUILTINS",
    "HOST_TOOLS_MESSAGE",
    "TOOL_ENVIRONMENT_OPS",
    "EnvironmentRunner",
    "EventShapeError",
    "HostRunner",
    "ToolOutcome",
    "check_events",
    "run_tool",
]
