"""The session core's vocabulary: its state, what it is told (inputs) and what it decides (a Step).

Everything here is a frozen value with no actor, no disk and no clock: the session actor
(brain/actors/session/actor.py) turns messages into inputs, calls `brain.sessions.core.step`, and
carries out the Step it gets back in one fixed order (commit, send, act, reply, checkpoint,
timers). See docs/architecture.md, "The session core".
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from brain.errors import BrainError
from brain.journal import Projection
from brain.protocol.messages import Delivered
from brain.protocol.targets import Target


class Phase(enum.Enum):
    """What the session is doing now; exactly one at a time."""

    CLOSED = "closed"  # no journal open: before the first command, after a delete or damage
    IDLE = "idle"  # journal open, nothing in flight
    CREATING = "creating"  # Environment setup in flight
    RUNNING = "running"  # a turn's activation is in flight
    STOPPING = "stopping"  # a turn being cancelled or past its deadline, not yet finished
    ENDING = "ending"  # Environment detach in flight
    DELETING = "deleting"  # Environment teardown in flight


IDLE_PHASES = frozenset({Phase.CLOSED, Phase.IDLE})
TURN_PHASES = frozenset({Phase.RUNNING, Phase.STOPPING})
ENVIRONMENT_PHASES = {"setup": Phase.CREATING, "detach": Phase.ENDING,
                      "teardown": Phase.DELETING}


@dataclass(frozen=True)
class Limits:
    """The deployment's bounds (BRAIN_* settings); 0 means no bound, as everywhere."""

    max_model_calls: int = 0
    max_turn_secs: float = 0
    max_tool_secs: float = 0
    max_emitted_bytes: int = 0
    idle_ttl_ms: int | None = None  # the default when the session's config names none
    webhooks: bool = False  # a webhook is configured: each turn's end owes a delivery


@dataclass(frozen=True)
class Requester:
    """Who waits for an answer: a web endpoint's address (None: nobody) and its request id."""

    reply_to: Any
    request_id: str


@dataclass(frozen=True)
class Pending:
    """An effect out at an executor, and the guest call waiting for it."""

    effect: str  # "model_call" | "tool_call"
    call_id: int


@dataclass(frozen=True)
class ToolBatch:
    """One `tools.call`: the guest gets every result at once, in call order."""

    order: tuple[int, ...]
    results: Mapping[int, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Turn:
    sequence: int  # the turn_started record
    activation: int  # the activation_started record
    requester: Requester | None  # a `send` waits for the TurnResult; a `submit` does not
    model_calls: int = 0
    emitted_bytes: int = 0
    forced_error: dict[str, Any] | None = None  # a limit the turn broke: it fails with this
    stop_reason: str | None = None  # "cancelled" | "timeout" once Brain is stopping the turn
    pending: Mapping[int, Pending] = field(default_factory=dict)  # started seq → waiter
    batches: Mapping[int, ToolBatch] = field(default_factory=dict)  # guest call id → batch
    deadline_ms: int | None = None  # when BRAIN_MAX_TURN_SECS runs out (epoch ms)
    parked: frozenset[int] = frozenset()  # pending effects whose outcome goes to the registry
    suspended: bool = False  # no activation runs: the waiting guest resumes in a fresh one
    # The turn's own limits: the tightest of the deployment's, the session's and the turn's
    # (asked_limits.py); None for a turn begun by a Brain that had none of its own.
    limits: Limits | None = None

    def stopping_error(self) -> dict[str, Any] | None:
        if self.stop_reason == "timeout":
            secs = self.limits.max_turn_secs if self.limits is not None else 0
            within = f" of {secs:g} s" if secs else ""
            return {"code": "turn_timeout",
                    "message": f"the turn exceeded its deadline{within} (BRAIN_MAX_TURN_SECS, "
                               f"or the lower limit the session or the message asked for)"}
        if self.stop_reason == "cancelled":
            return {"code": "cancelled", "message": "the turn was cancelled"}
        return None


@dataclass(frozen=True)
class EnvironmentWork:
    """Setup (create), detach (end) or teardown (delete) of the Environments, in flight."""

    op: str
    requester: Requester
    waiting: frozenset[int]
    failures: tuple[str, ...] = ()


@dataclass(frozen=True)
class SessionState:
    session_id: str
    limits: Limits
    phase: Phase = Phase.CLOSED
    projection: Projection | None = None  # None exactly when CLOSED
    damage: str | None = None  # why the journal was refused, while CLOSED because of it
    turn: Turn | None = None  # set exactly in TURN_PHASES
    environments: EnvironmentWork | None = None  # set exactly in CREATING, ENDING, DELETING
    waiting_ends: tuple[Requester, ...] = ()  # ends that arrived while work was in flight
    handled: int = 0  # commands taken: the registry releases only when it sent as many
    release_wanted: bool = False
    idle_generation: int = 0  # names the latest IdleTimeout; older ones are stale
    # The turn_failed this actor's open of the journal recorded for an interrupted turn: what
    # a dead actor's orphaned sync send is answered with (core._recover).
    interrupted_turn: dict[str, Any] | None = None

    @property
    def idle(self) -> bool:
        """Nothing in flight: the one definition of idle (release, verify-before-write)."""
        return self.phase in IDLE_PHASES


def new_session(session_id: str, limits: Limits) -> SessionState:
    return SessionState(session_id, limits)


# --- inputs ---------------------------------------------------------------------------------
# Besides these, the core takes these messages as they are: EffectDone from an executor,
# ActivationFinished from the activation thread, and the timers IdleTimeout, TurnDeadline and
# CancelGrace (brain/protocol/messages.py).


@dataclass(frozen=True)
class Opened:
    """The actor opened the journal (recovering torn writes); this is what it holds.

    `admitted` is a turn a web worker admitted without an actor in this run of the server
    (brain/web/admission.py): its `turn_started` is durable and nothing of it has run yet, so
    the open starts it instead of failing it as interrupted.
    """

    projection: Projection
    admitted: AdmittedTurn | None = None
    suspended: Turn | None = None  # the turn this session's last actor suspended


@dataclass(frozen=True)
class AdmittedTurn:
    sequence: int  # its turn_started record
    input: Any
    limits: dict[str, Any] | None = None  # the lower limits its message asked for


@dataclass(frozen=True)
class Damaged:
    """The actor's open or CRC pass refused the journal, and it closed it."""

    message: str


@dataclass(frozen=True)
class Command:
    """A client's command, delivered by the registry.

    `journal` is what the actor found on disk when the journal was not open: whether the
    session's journal exists (`True`/`False`), or None when it was opened (or already was);
    the core refuses a create of an existing session and any other command of a missing one.
    `refused` is a failure of the actor's own (an internal error) the client must hear;
    `set_up` names the Environments a delete owes teardown to (read from disk).
    """

    delivered: Delivered
    refused: BrainError | None = None
    set_up: frozenset[str] = frozenset()
    journal: bool | None = None


@dataclass(frozen=True)
class GuestCall:
    """One `brain.call` of the running Agentloop, numbered by the actor."""

    call_id: int
    op: dict[str, Any]


@dataclass(frozen=True)
class ActivationFinished:
    """Posted by the activation thread when the guest returned, failed or was stopped."""

    turn: int
    result: dict[str, Any] | None
    error: dict[str, Any] | None


@dataclass(frozen=True)
class RecordedOutcome:
    """During a replay (brain/sessions/replay.py): an effect's journaled terminal record and
    the Tool Events committed with it, in place of the executor's EffectDone."""

    records: tuple[dict[str, Any], ...]


# --- outputs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Send:
    """A message to a shared actor, by its global name (brain/protocol/messages.py) or
    `REGISTRY`; sent only after this Step's records are durable."""

    to: str
    message: Any


REGISTRY = Target.REGISTRY


@dataclass(frozen=True)
class ClientReply:
    requester: Requester
    body: dict[str, Any] | None = None
    error: BrainError | None = None


@dataclass(frozen=True)
class GuestAnswer:
    call_id: int
    result: dict[str, Any]


@dataclass(frozen=True)
class Timer:
    secs: float
    payload: Any


@dataclass(frozen=True)
class StartActivation:
    """Run the Agentloop recorded at creation for `turn` (its activation_started is durable)."""

    turn: int
    agentloop: dict[str, Any]
    payload: dict[str, Any]
    deadline_ms: int | None = None  # the turn's one deadline (Turn.deadline_ms), for the epoch


@dataclass(frozen=True)
class StopActivation:
    """A cancel stops the guest itself too, not only its effects."""


@dataclass(frozen=True)
class SuspendActivation:
    """The guest waits on parked effects only: drop its instance (it resumes in a fresh one,
    by replay, when it is answered) and let the actor go (the step also releases)."""


@dataclass(frozen=True)
class ResumeActivation:
    """The suspended turn's guest is answered: run the Agentloop again in a fresh instance,
    answering its guest calls from what its activation journaled until it reaches the live
    end of the journal (brain/sessions/replay.py), then serving it as any activation."""

    turn: int
    activation: int
    agentloop: dict[str, Any]


@dataclass(frozen=True)
class RemoveFiles:
    """Close the journal and remove the session's directory and local Environment trees."""


@dataclass(frozen=True)
class Telemetry:
    """A line for the telemetry sink, if one is configured."""

    line: dict[str, Any]


Action = (StartActivation | StopActivation | SuspendActivation | ResumeActivation | RemoveFiles
          | Telemetry)


@dataclass(frozen=True)
class Step:
    """What one input came to. The actor carries it out in field order: `records` (one
    durable batch) before any `sends` (effects they fence), `actions`, `replies` (clients and
    the guest, who so see only what is durable), the `checkpoint`, then `timers`."""

    state: SessionState
    records: tuple[dict[str, Any], ...] = ()  # with seq and at: exactly what the journal gets
    sends: tuple[Send, ...] = ()
    actions: tuple[Action, ...] = ()
    replies: tuple[ClientReply | GuestAnswer, ...] = ()
    checkpoint: bool = False
    timers: tuple[Timer, ...] = ()
    notes: tuple[str, ...] = ()  # for the log: something arrived that nothing waited for
