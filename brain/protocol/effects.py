"""The messages of effects: a session actor's Run* to an executor, and what comes back.

Run* go session → executor, each only after its `*_started` record is durable; the executor
answers the sender with one EffectDone, which the session commits before anyone sees it.
`park` (a model or Tool call): the session actor parked the effect as it sent it
(brain/actors/park_at_once.py), so its outcome goes to the registry and no `Parked` comes.
Every other message crossing an actor boundary is in brain/protocol/messages.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brain.effects import Outcome
from brain.protocol.messages import Message


@dataclass(frozen=True)
class RunModelCall(Message):
    session_id: str
    started: int
    model: dict[str, Any]
    request: dict[str, Any]
    park: bool = False


@dataclass(frozen=True)
class RunToolCall(Message):
    session_id: str
    started: int
    tool: dict[str, Any]
    invocation: dict[str, Any]
    deadline: float | None
    environments: list[dict[str, Any]]
    park: bool = False


@dataclass(frozen=True)
class RunEnvironmentOp(Message):
    session_id: str
    started: int
    environment: dict[str, Any]
    op: str
    request: dict[str, Any]


@dataclass(frozen=True)
class CancelEffect(Message):
    session_id: str
    started: int


@dataclass(frozen=True)
class EffectDone(Message):
    """Executor → session: what the effect `started` came to (brain.effects.Outcome).

    `ok`: `result` is the answer (a model result, a Tool's `{content, is_error}`, an op's
    result). Any other outcome: `error` is `{message, status?}`; a Tool's `result` is still
    what the model is told (`{content, is_error: true}`). `events` are the extension Events a
    Tool asked for, `{kind, data}` each, checked by the session before they are committed.
    """

    session_id: str
    started: int
    outcome: Outcome
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    events: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Parked(Message):
    """Executor → session actor: the effect `started` did not end within the suspension grace
    (BRAIN_SUSPEND_AFTER_MS), or work waits for a session actor, so its outcome will go to the
    registry instead of here. Exactly one of Parked and the EffectDone reaches the actor that
    sent the effect. A turn whose every pending effect is parked is suspended. An effect the
    session actor parked as it sent it (`park`) gets no Parked: the actor steps its own."""

    session_id: str
    started: int


@dataclass(frozen=True)
class ParkAll(Message):
    """Registry → executors: work has started to wait for a session actor; park every effect
    still running (its turn then lets its actor go) instead of waiting out the grace."""


@dataclass(frozen=True)
class EffectBatch(Message):
    """Session actor → one executor: several effect messages fenced by one commit (a guest's
    `tools.call` of four Tools is one message, not four). The executor takes each in order as
    if it had come alone; a trace shows each as its own line."""

    messages: tuple[Any, ...]


@dataclass(frozen=True)
class OutcomeBatch(Message):
    """Executor → session actor: the EffectDones of effects that finished together, so the
    session commits their outcomes in one batch."""

    outcomes: tuple[EffectDone, ...]
