"""The messages of host calls (docs/host-tools.md): executors, the HostDispatcher and web workers.

Apart from brain/protocol/messages.py because no session actor ever sends or receives one: a host
call is an effect whose executor hands it to the dispatcher, where a client's long poll picks it
up over HTTP. The session sees only the effect's `EffectDone`, as for any other Tool or op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brain.protocol.messages import Message


@dataclass(frozen=True)
class HostCallOffer(Message):
    """Executor → host dispatcher: a journaled Tool call or Environment op for a host.

    Offered once; the dispatcher hands it to at most one poll answer, ever.
    """

    call_id: str
    kind: str  # "tool" | "environment"
    name: str
    session_id: str
    started: int
    op: str | None
    payload: Any  # the Tool input, or the op's request
    deadline: float | None  # time.time() epoch
    reply_to: Any  # the executor, which wakes the waiting thread


@dataclass(frozen=True)
class HostCancel(Message):
    """Executor → host dispatcher: the effect was cancelled."""

    call_id: str


@dataclass(frozen=True)
class HostCallVerdict(Message):
    """Host dispatcher → executor: the host's normalized answer, or the failure outcome."""

    call_id: str
    answer: dict[str, Any] | None = None
    outcome: str | None = None  # error|cancelled|timeout|unknown when there is no answer
    message: str = ""


@dataclass(frozen=True)
class HostPoll(Message):
    """Web → host dispatcher: a host asks for work; answered with a Reply, at once or later."""

    request_id: str
    tools: tuple[str, ...]
    environments: tuple[str, ...]
    scope: str | None  # a session token's session; None for the operator
    host_id: str | None
    max_calls: int
    wait_secs: float


@dataclass(frozen=True)
class HostAnswer(Message):
    """Web → host dispatcher: a host's answer to one delivered call; answered with a Reply."""

    request_id: str
    call_id: str
    scope: str | None
    body: dict[str, Any]
