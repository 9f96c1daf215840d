"""Host calls: Tool calls and Environment ops that a client process (a "host") performs.

A pure layer, like brain/tools and brain/environments: the wire rules (`protocol`) and the
bookkeeping of pending calls and waiting polls (`ledger`) with no actors, journal or settings.
The HostDispatcher actor (brain/actors/executors/host_dispatcher.py) wraps the ledger; see
docs/host-tools.md.
"""

from brain.environments.host import HostRunner
from brain.host.ledger import AnswerRefused, Ledger, Send
from brain.host.protocol import (
    CANCEL_GRACE_SECS,
    DEFAULT_CALLS_PER_POLL,
    DEFAULT_WAIT_SECS,
    MAX_CALLS_PER_POLL,
    MAX_WAIT_SECS,
    HostCallFailed,
    call_id_of,
    check_environment_answer,
    check_tool_answer,
)

__all__ = [
    "CANCEL_GRACE_SECS",
    "DEFAULT_CALLS_PER_POLL",
    "DEFAULT_WAIT_SECS",
    "MAX_CALLS_PER_POLL",
    "MAX_WAIT_SECS",
    "AnswerRefused",
    "HostCallFailed",
    "HostRunner",
    "Ledger",
    "Send",
    "call_id_of",
    "check_environment_answer",
    "check_tool_answer",
]
