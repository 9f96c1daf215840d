"""The messages that cross an actor boundary, as small frozen dataclasses.

Thespian pickles these between processes, so they carry sequences, ids and short payloads; bulk
history stays in the journal. Commands travel web → registry → session; replies go straight from
the session actor back to the web worker's private endpoint named in `reply_to`. The messages of
host calls, which no session actor sees, are in brain/protocol/host_calls.py; those of
effects (a session's Run* to an executor and what comes back) in brain/protocol/effects.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

REGISTRY_GLOBAL_NAME = "brain.registry"
MODEL_EXECUTOR_GLOBAL_NAME = "brain.executor.model"
TOOL_EXECUTOR_GLOBAL_NAME = "brain.executor.tool"
METRICS_GLOBAL_NAME = "brain.metrics"
ENVIRONMENT_EXECUTOR_GLOBAL_NAME = "brain.executor.environment"
HOST_DISPATCHER_GLOBAL_NAME = "brain.host.dispatcher"
WEBHOOK_EXECUTOR_GLOBAL_NAME = "brain.executor.webhook"

SHARED_ACTOR_ROLES = {
    MODEL_EXECUTOR_GLOBAL_NAME: "model executor",
    TOOL_EXECUTOR_GLOBAL_NAME: "tool executor",
    ENVIRONMENT_EXECUTOR_GLOBAL_NAME: "environment executor",
    HOST_DISPATCHER_GLOBAL_NAME: "host dispatcher",
    METRICS_GLOBAL_NAME: "metrics",
    WEBHOOK_EXECUTOR_GLOBAL_NAME: "webhook executor",
}
"""The shared actors the ActorSupervisor replaces when they die, by global name, as logs,
metrics and /readyz name them."""


class Message:
    """Base of every message: a short `str`.

    Thespian formats each message it sends with `str()` for a debug log line, whether or not
    the line is written (its log call takes the formatted text as an argument). A dataclass's
    `str` is the repr of every field, model results and transcripts included, so it is built
    per send for nothing, and could put payloads in a log. The class name is enough.
    """

    __slots__ = ()

    def __str__(self) -> str:
        return type(self).__name__


# --- commands a client sends to one session (through the registry) ------------------------


@dataclass(frozen=True)
class CreateSession(Message):
    """A new session: its resolved config and seed transcript. A fork (brain/sessions/fork.py)
    also carries the parent's kv and `forked_from {session_id, sequence}`, its first record."""

    config: dict[str, Any]
    transcript: list[dict[str, Any]]
    kv: dict[str, Any] = field(default_factory=dict)
    forked_from: dict[str, Any] | None = None
    traceparent: str | None = None  # BRAIN_OTEL: the create's commit continues the request


@dataclass(frozen=True)
class StartTurn(Message):
    input: Any
    mode: str  # "send" waits for the turn; "submit" is answered once turn_started is durable
    traceparent: str | None = None  # BRAIN_OTEL: the W3C trace context the turn continues
    limits: dict[str, Any] | None = None  # lower limits for this turn (sessions/asked_limits.py)


@dataclass(frozen=True)
class CancelTurn(Message):
    pass


@dataclass(frozen=True)
class EndSession(Message):
    pass


@dataclass(frozen=True)
class DeleteSession(Message):
    pass


@dataclass(frozen=True)
class Orphan:
    """A request a session actor took and never answered, because its process died: once the
    session is recovered, its new actor answers it rather than leave the client waiting."""

    request_id: str
    reply_to: Any
    waits_for_turn: bool  # a sync send (or a suspended turn's): the answer is its TurnResult


@dataclass(frozen=True)
class Recover(Message):
    """Open the session only to record interrupted work: the registry's start-up scan, or a
    session actor that died holding the session, whose unanswered requests are `orphans`."""

    orphans: tuple[Orphan, ...] = ()


@dataclass(frozen=True)
class RunAdmitted(Message):
    """Web → registry → session: run the turn a web worker admitted without an actor
    (brain/web/admission.py). Opening the journal starts it; nobody waits for an answer.
    `handed_back`: times a session actor found the journal locked and gave the turn back to
    the registry (brain/actors/session/actor.py, `HAND_BACK_SECS`)."""

    handed_back: int = 0


@dataclass(frozen=True)
class AdmittedTurns(Message):
    """Web → registry: sessions whose turns a web worker admitted (one `RunAdmitted` each),
    batched: a burst's admissions cost the registry a few messages, not one each. The registry
    answers `Reply(request_id)` once it holds them; the worker sends again until it does, so a
    batch may arrive twice (a repeat is harmless: see Registry.receiveMsg_AdmittedTurns)."""

    request_id: str
    session_ids: tuple[str, ...]


@dataclass(frozen=True)
class RecoverSessions(Message):
    """Boot → registry, at start-up: sessions a crash left with work in flight (one `Recover`
    each), in batches. Confirmed like `AdmittedTurns`: the registry answers `Reply(request_id)`
    once it holds them, and boot sends a batch again until it does."""

    request_id: str
    session_ids: tuple[str, ...]


@dataclass(frozen=True)
class Outcomes(Message):
    """Registry → session actor: effect outcomes an executor sent to the registry because the
    effects were parked (`Parked`): their session's turn may be suspended, held by no actor.
    Delivered like a command, so the registry's count of what an actor handled stays exact;
    nobody waits for an answer, and it is never refused (brain/actors/registry/admission.py)."""

    outcomes: tuple[Any, ...]  # EffectDone each (brain/protocol/effects.py)


@dataclass(frozen=True)
class EffectsLost(Message):
    """Registry → session actor: the shared actor `actor` (a global name) exited, and the
    effects of `kinds` it held went with it. Each such effect the session still waits for ends
    `unknown` (it may have happened; it is never sent again), as after a restart, so the
    Agentloop sees an outcome and the turn goes on to its end. Delivered like a command, so the
    registry's count stays exact; nobody waits for an answer, and it is never refused."""

    actor: str
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class ExpireTurn(Message):
    """Registry → session actor: the turn `turn`, suspended, passed BRAIN_MAX_TURN_SECS while
    no actor held it (the registry keeps suspended turns' deadlines)."""

    turn: int


@dataclass(frozen=True)
class WebhookRecord(Message):
    """Webhook executor → registry → session actor: journal what became of one webhook
    delivery (an attempt that failed, its success, or its abandonment), a private record built
    by brain/sessions/records.py. Nobody waits for an answer; it is never refused. `offers`:
    times it was turned back before (`WebhookRecordLater`)."""

    record: dict[str, Any]
    offers: int = 0


@dataclass(frozen=True)
class DeliverWebhook(Message):
    """Session actor (after `webhook_delivery_pending` is durable) or boot (deliveries a
    restart found pending) → webhook executor: POST `body` under the stable `delivery_id`;
    `attempts` were made before. `started`: the sequence of its `webhook_delivery_pending`, the
    commit it may not precede (`brain trace --check`); 0 when boot resumes it."""

    session_id: str
    delivery_id: str
    body: dict[str, Any]
    attempts: int = 0
    started: int = 0


@dataclass(frozen=True)
class WebhookRecordLater(Message):
    """Session actor → webhook executor: `record` arrived while a turn is open; nothing is
    journaled inside a turn's records but the turn's own (a resumed activation's replay reads
    them back), so the executor offers it again later."""

    session_id: str
    record: dict[str, Any]
    offers: int = 0


@dataclass(frozen=True)
class ResumeWebhooks(Message):
    """Boot → webhook executor, at start-up: the deliveries the journals hold pending."""

    deliveries: tuple[DeliverWebhook, ...]


Command = (CreateSession | StartTurn | CancelTurn | EndSession | DeleteSession | Recover
           | RunAdmitted | Outcomes | EffectsLost | ExpireTurn | WebhookRecord)


@dataclass(frozen=True)
class ToSession(Message):
    """Web → registry: route `command` to the session's actor, opening it on demand."""

    request_id: str
    session_id: str
    command: Command
    reply_to: Any = None  # where the answer goes (a web worker's reply inbox); None: the sender


@dataclass(frozen=True)
class Services(Message):
    """Boot → registry: resolved addresses of the shared actors, by global name.

    Session actors get these with every delivery instead of calling createActor(globalName)
    themselves: inside an actor that returns a pending address, and a short-lived session can
    exit with messages still queued on it.
    """

    addresses: dict[str, Any]


@dataclass(frozen=True)
class SharedActorReplaced(Services):
    """Boot → registry and the executors: the shared actor `name` (a global name) exited and
    a new one took its place; `addresses` are every shared actor's, the new one's included.

    A subclass of Services, so an actor with nothing to settle just takes the addresses. The
    registry also settles what the dead actor held (`EffectsLost`); an executor whose host
    calls went to a dead HostDispatcher settles those (brain/actors/executors/host_calls.py).
    """

    name: str = ""


@dataclass(frozen=True)
class WhichProcess(Message):
    """Anyone → any Brain actor: answered with a ProcessIs (the supervisor learns a new
    actor's real address this way; a readiness probe learns that the actor answers)."""

    name: str = ""  # echoed back, to tell the answers apart


@dataclass(frozen=True)
class ProcessIs(Message):
    pid: int
    role: str  # the actor's trace name: "model_executor", "registry", ...
    name: str = ""


@dataclass(frozen=True)
class StartSharedActors(Message):
    """Boot → ActorSupervisor, once: create the registry and every shared actor, watch them,
    and answer SharedActorsStarted. `registry`: the registry's global name on this member."""

    registry: str


@dataclass(frozen=True)
class SharedActorsStarted(Message):
    addresses: dict[str, Any]  # every shared actor's real address, by global name


@dataclass(frozen=True)
class WhereAre(Message):
    """Web → ActorSupervisor: answered with ActorsAre. Web workers find the shared actors this
    way instead of by global name, which would create one that is missing, unsupervised."""


@dataclass(frozen=True)
class ActorsAre(Message):
    addresses: dict[str, Any]  # the live shared actors (the registry included), by global name
    missing: tuple[str, ...]  # roles of shared actors that are dead or being replaced now


@dataclass(frozen=True)
class ServerMustStop(Message):
    """ActorSupervisor → boot: an actor that cannot be replaced safely (the registry) died;
    `reason` is the one line `brain serve` prints before it exits non-zero."""

    reason: str


@dataclass(frozen=True)
class Delivered(Message):
    """Registry → session actor: a routed command and where the answer goes."""

    request_id: str
    session_id: str
    command: Command
    reply_to: Any  # ActorAddress of the asking web endpoint, or None for fire-and-forget
    services: dict[str, Any] = field(default_factory=dict)
    busy: bool = False  # more sessions served at once than CPUs: report releases late
    first: bool = False  # the first command since the registry gave this actor the session
    suspended: Any = None  # with `first`: the session's suspended turn (a sessions.state.Turn)


@dataclass(frozen=True)
class Reply(Message):
    """Session actor → web endpoint: the answer to one request."""

    request_id: str
    body: dict[str, Any] | None = None
    error_code: str | None = None
    error_message: str | None = None
    retry_after: int | None = None  # with a 503: the seconds a client should wait (Retry-After)


# --- session actor lifecycle ---------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseMe(Message):
    """The session core → its actor: idle now, and its retention says release; or its turn
    waits on parked effects only (`suspended`, a sessions.state.Turn), so the turn is
    suspended and nothing of it stays in the process. The actor drops the session and tells
    the registry with `Released`; `handled` counts the commands it took."""

    session_id: str
    handled: int
    suspended: Any = None


@dataclass(frozen=True)
class Released(Message):
    """Session actor → registry: it holds nothing of `session_id` any more (journal closed,
    state gone, timers of that session void) after handling `handled` commands. The registry
    takes it back only if it forwarded no more than that (brain/actors/registry/actor.py). The
    session's metric deltas ride along, so a released turn sends no MetricsReport of its own:
    the registry passes them on in batches. One report may cover several releases of the same
    session (brain/actors/session/release_report.py): `handled` and `opens` count them all."""

    session_id: str
    handled: int
    counters: dict[Any, float] = field(default_factory=dict)
    observations: dict[str, list[float]] = field(default_factory=dict)
    opens: int = 1  # times the session was opened in the actor since its last report
    suspended: Any = None  # the suspended turn the registry keeps until an outcome comes


@dataclass(frozen=True)
class ReportRelease(Message):
    """A session actor's timer: the releases it has not reported may be due
    (brain/actors/session/release_report.py)."""


@dataclass(frozen=True)
class WarmUp(Message):
    """Registry → a freshly forked pooled actor: make the Agentloop runtime and load these
    module files before any session (the registry reads the configuration once for all)."""

    modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class Warmed(Message):
    """Pooled actor → registry: its warm-up is over (whether or not it loaded everything)."""


@dataclass(frozen=True)
class FillPool(Message):
    """Boot → registry: fork the pool now, before `ready`; answered with "filled" once every
    one of those actors has warmed up (a stop right after `ready` then finds none still
    starting, which made Thespian's shutdown wait its full 10 s)."""


@dataclass(frozen=True)
class RefillPool(Message):
    """Registry → itself (wakeupAfter payload): fork one pooled actor if still short and quiet."""


@dataclass(frozen=True)
class IdleTimeout(Message):
    """Session → itself (wakeupAfter payload) when a retention interval may have elapsed."""

    generation: int


@dataclass(frozen=True)
class TurnDeadline(Message):
    """Session → itself: BRAIN_MAX_TURN_SECS elapsed for this turn."""

    turn: int


@dataclass(frozen=True)
class CancelGrace(Message):
    """Session → itself: executors had their bounded time to confirm a cancellation."""

    turn: int


# --- metrics -------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricsReport(Message):
    """Session actor or registry → MetricsActor: counter deltas and histogram observations."""

    source: str
    counters: dict[Any, float]
    observations: dict[Any, list[float]]


@dataclass(frozen=True)
class MetricsScrape(Message):
    """Web → MetricsActor: answered with the merged state's snapshot (brain/metrics.py)."""
