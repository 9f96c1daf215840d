"""The Session actor: the only writer of one session's journal, a thin shell around its core.

Every decision is made by the pure session core (`brain.sessions.core.step`). This actor turns
each message into an input for it, does the I/O the core cannot (open and verify the journal,
commit, send, run the Agentloop's thread, remove files), and carries out each Step in one order,
in `_carry_out`: the records are committed (one write, one fdatasync) before any message that
depends on them is sent and before anyone, client or guest, is answered.

It is one object, and the session's state is its own, created here (`__init__`,
`_fresh_session_state`), so one file shows what a session holds; a helper keeps only the
bookkeeping of its own job (a suspended turn's history, the releases not yet reported), and its
docstring names it, with what of the actor's state it reads and changes. The helpers, each with
one job:
- `journal`, brain/actors/session/journal.py: open for a command, commit, abandon after a failed
  commit, checkpoint, close;
- `suspension`, brain/actors/session/suspension.py: suspended turns let go and resumed by replay;
- `pool`, brain/actors/session/pool_member.py: warm-up in the pool, release, release reports;
- `inline`, brain/actors/session/inline.py: guest calls answered on the activation's thread.
Thespian dispatches a message to a `receiveMsg_<Type>` of this class, so each handler is here,
handing over to its helper where the work is the helper's.

The process outlives its sessions: the registry forks it ahead of need into a pool, and when a
session is released the actor drops everything of it (`PoolMembership.release`) but a closed
writer and projection for its next open here (brain/actors/session/kept_journal.py), and waits
for the next.
A timer or an executor's answer still on its way for the session it served is recognized by its
lease (timers) or its session id (answers) and dropped, so nothing of one session reaches another.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thespian.actors import ActorExitRequest, WakeupMessage, WatchMessage

from brain import errors
from brain.actors.admission_board import BoardReader
from brain.actors.bridge import BridgedActor
from brain.actors.park_at_once import ParkAtOnce
from brain.actors.session.activation import (
    ActivationDone,
    PendingGuestCall,
    activate_recorded,
    agentloop_runtime,
    start_activation,
)
from brain.actors.session.deadline import monotonic_deadline
from brain.actors.session.inline import InlineCalls
from brain.actors.session.journal import COMMIT_FAILED, CommitFailed, JournalSide
from brain.actors.session.kept_journal import KeptJournals
from brain.actors.session.pool_member import PoolMembership
from brain.actors.session.priority import lower_own_priority
from brain.actors.session.release_report import ReleaseReports
from brain.actors.session.suspension import Suspension
from brain.actors.thespian.proctitle import rename_actor_process
from brain.damage_report import forget_damage
from brain.journal import JournalLocked, JournalWriter
from brain.live import LivePublisher
from brain.metrics import Latencies, MetricBatch
from brain.protocol.effects import EffectBatch, EffectDone, OutcomeBatch, Parked
from brain.protocol.messages import (
    ENVIRONMENT_EXECUTOR_GLOBAL_NAME,
    METRICS_GLOBAL_NAME,
    MODEL_EXECUTOR_GLOBAL_NAME,
    TOOL_EXECUTOR_GLOBAL_NAME,
    WEBHOOK_EXECUTOR_GLOBAL_NAME,
    CreateSession,
    Delivered,
    MetricsReport,
    Reply,
    ReportRelease,
    RunAdmitted,
    StartTurn,
    ToSession,
    WarmUp,
)
from brain.protocol.targets import Target
from brain.session_limits import limits_from
from brain.sessions import core
from brain.sessions.carry_out import Mode, carry_out
from brain.sessions.state import (
    ClientReply,
    Command,
    GuestAnswer,
    GuestCall,
    RemoveFiles,
    ResumeActivation,
    SessionState,
    StartActivation,
    Step,
    StopActivation,
    SuspendActivation,
    Telemetry,
    new_session,
)
from brain.settings import Settings
from brain.tracing import otel

log = logging.getLogger(__name__)

HAND_BACK_SECS = (1.0, 2.0, 4.0, 8.0, 16.0)
"""Pauses before an admitted turn whose journal was locked goes back to the registry, one per
hand-back (see `_hand_back`)."""


@dataclass(frozen=True)
class HandBack:
    """The actor's own timer: send `message` (an admitted turn) to the registry again."""

    message: ToSession


class SessionActor(BridgedActor):
    """One session at a time: its state, its journal's one writer, its Agentloop's thread.

    Everything the actor holds is created in `__init__` (what lasts across the sessions this
    process serves) and `_fresh_session_state` (what belongs to the session served now)."""

    trace_name = "session"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = Settings.from_env()
        lower_own_priority(self.settings.session_actor_nice)
        # Reentrant: a handler's step may run another step (an open folds `Opened` first).
        # Held by `receiveMessage` and by the inline path, so the two never step the core at once.
        self.state_lock = threading.RLock()
        # Resolved once: `Settings.data_path` resolves symlinks (a syscall per component).
        self.sessions_path = self.settings.sessions_path
        self.live = LivePublisher(self.settings.data_path)  # commit hints to the web workers
        self.registry: Any = None  # who sent the last `Delivered`: releases are reported there
        self.services: dict[str, Any] = {}  # global name -> address, from the last `Delivered`
        self.writer: JournalWriter | None = None  # the session's journal, while it is open
        # the sessions released here last (brain/actors/session/kept_journal.py)
        self.kept = KeptJournals()
        self._activations = 0  # activations started by this actor process, for their numbers
        self._void_activations: set[int] = set()  # abandoned (a failed commit, a suspension)
        self.lease = 0  # sessions served so far; stamps timers so a later session ignores them
        self._board = BoardReader(self.settings.data_path)  # whether work waits for an actor
        self._park_at_once = ParkAtOnce(self.settings.suspend_after_ms, self._board)
        self._parked_at_once: list[Parked] = []  # effects just sent parked, to step next
        self._hands = ActorHands(self)
        self._inline_hands = ActorHands(self, inline=True)
        # BRAIN_OTEL: the spans of the session's turns, from its commits (brain/tracing/otel.py)
        self.otel_spans: otel.SessionSpans | None = None
        # The helpers, each with one job; what each reads and changes, its docstring says.
        self.journal = JournalSide(self)
        self.suspension = Suspension(self)
        self.pool = PoolMembership(self, ReleaseReports(), self._board)
        self.inline = InlineCalls(self)
        self._fresh_session_state()

    def _new_core(self, session_id: str) -> SessionState:
        """The core of a session before its first command (or after its state was dropped)."""
        return new_session(session_id, limits_from(self.settings))

    def _fresh_session_state(self) -> None:
        """Everything that belongs to one session, as before its first command."""
        self.core: SessionState | None = None  # set by the first command, which names the id
        if self.otel_spans is not None:
            self.otel_spans.drop("released")
        self.otel_spans = otel.SessionSpans(self.settings.data_path) \
            if otel.tracer() is not None else None
        self.guest_calls: dict[int, PendingGuestCall] = {}  # guest calls awaiting an answer
        self.next_call_id = 0  # the last guest call's id
        self.stopper: Any = None  # the running activation's ActivationStopper
        self.activation = 0  # the running activation's number
        self.metrics = MetricBatch()  # counted since the last report, the registry's at release
        self.latencies = Latencies()  # starts committed, each awaiting its end's latency

    def trace_session_id(self) -> str | None:
        return self.core.session_id if self.core is not None else None

    def receiveMessage(self, message: Any, sender: Any) -> Any:
        """Every message is handled under the state lock: the inline path (`inline`) steps the
        core on the activation's thread, and never while a handler does."""
        with self.state_lock:
            return super().receiveMessage(message, sender)

    # --- messages become the core's inputs --------------------------------------------------

    def receiveMsg_Delivered(self, msg: Delivered, sender: Any) -> None:
        self.registry = sender
        self.services = msg.services
        self.pool.delivered(msg)
        if self.core is None:
            rename_actor_process(f"session {msg.session_id}")
            self.core = self._new_core(msg.session_id)
        handled = self.core.handled
        if self.otel_spans is not None and isinstance(msg.command, (StartTurn, CreateSession)):
            self.otel_spans.pending_parent = msg.command.traceparent
        try:
            found, set_up = self.journal.open_for(msg.command,
                                                  self.suspension.suspension_for(msg))
            self._step(Command(msg, set_up=set_up, journal=found))
        except Exception as exc:
            if isinstance(exc, JournalLocked) and isinstance(msg.command, RunAdmitted):
                self._hand_back(msg.session_id, msg.command)
            else:
                log.exception("session %s: command %s failed", msg.session_id,
                              type(msg.command).__name__)
            if self.core is not None and self.core.handled == handled:
                # Counted and answered all the same: the registry's release count stays exact.
                self._step(Command(msg, errors.Internal("internal error")))
        if self.otel_spans is not None:  # a turn it started took it; a refused one leaves none
            self.otel_spans.pending_parent = None

    def _hand_back(self, session_id: str, command: RunAdmitted) -> None:
        """The journal of an admitted turn stayed locked through the open's bounded wait: give
        the turn back to the registry a little later rather than drop it (its client has its
        202 and may only ever read the status). The turn runs once, whichever actor opens the
        journal first: the open runs it only while nothing of it has run."""
        attempt = command.handed_back
        if attempt >= len(HAND_BACK_SECS):
            log.error("session %s: journal still locked after %d hand-backs; its admitted turn "
                      "runs at the session's next command", session_id, attempt)
            return
        secs = HAND_BACK_SECS[attempt]
        log.warning("session %s: journal locked; the admitted turn goes back to the registry "
                    "in %.0f s", session_id, secs)
        self.wakeupAfter(secs, HandBack(ToSession(f"admitted-{session_id}", session_id,
                                                  RunAdmitted(attempt + 1))))

    def receiveMsg_WatchMessage(self, msg: WatchMessage, sender: Any) -> None:
        items_void = []
        for item in self.bridge.drain():
            if item.activation in self._void_activations:  # abandoned or suspended
                if isinstance(item, PendingGuestCall):
                    item.respond({"error": {"code": "internal", "message": COMMIT_FAILED}})
                else:  # its end: the last this activation posts
                    items_void.append(item.activation)
            elif isinstance(item, PendingGuestCall):
                self._guest_call(item)
            elif isinstance(item, ActivationDone):
                self.stopper = None
                self._step(item.event)
        for item in items_void:
            self._void_activations.discard(item)

    def receiveMsg_EffectDone(self, msg: EffectDone, sender: Any) -> None:
        self._outcomes((msg,))

    def receiveMsg_OutcomeBatch(self, msg: OutcomeBatch, sender: Any) -> None:
        self._outcomes(msg.outcomes)

    def receiveMsg_Parked(self, msg: Parked, sender: Any) -> None:
        self.suspension.parked(msg)

    def _outcomes(self, outcomes: tuple[EffectDone, ...]) -> None:
        """Outcomes that arrived together: stepped in order, committed as one batch. One for a
        session this actor no longer serves (a late answer to a cancelled effect) is dropped."""
        mine = []
        for done in outcomes:
            if self.core is not None and done.session_id == self.core.session_id:
                mine.append(done)
            else:
                log.warning("an outcome for session %s, which this actor no longer serves",
                            done.session_id)
        if mine:
            self._step_all(mine)

    def receiveMsg_WakeupMessage(self, msg: WakeupMessage, sender: Any) -> None:
        if isinstance(msg.payload, HandBack):
            self.send(self.registry, msg.payload.message)
            return
        if isinstance(msg.payload, ReportRelease):
            self.pool.report_due()
            return
        lease, payload = msg.payload
        if lease == self.lease:  # a timer of a session served before is void
            self._step(payload)  # IdleTimeout, TurnDeadline or CancelGrace

    def receiveMsg_ActorExitRequest(self, msg: ActorExitRequest, sender: Any) -> None:
        # The bridge stays open until the process exits: Thespian still watches it (bridge.py).
        self.journal.close()
        self.live.close()

    # --- the pool's messages (brain/actors/session/pool_member.py) ---------------------------

    def receiveMsg_WarmUp(self, msg: WarmUp, sender: Any) -> None:
        self.pool.warm_up(msg, sender)

    def receiveMsg_ReportRelease(self, msg: ReportRelease, sender: Any) -> None:
        self.pool.report_asked()

    def _guest_call(self, call: PendingGuestCall) -> None:
        self.next_call_id += 1
        self.guest_calls[self.next_call_id] = call
        try:
            self._step(GuestCall(self.next_call_id, call.op))
        except Exception:
            log.exception("session %s: guest call %s failed", self.core.session_id,
                          call.op.get("op"))
            if self.guest_calls.pop(self.next_call_id, None) is not None:
                call.respond({"error": {"code": "internal", "message": "internal error"}})

    @property
    def session_dir(self) -> Path:
        return self.sessions_path / self.core.session_id

    # --- one step, carried out --------------------------------------------------------------

    def _step(self, event: Any) -> None:
        self._step_all([event])

    def _step_all(self, events: list[Any]) -> None:
        step = core.step_all(self.core, events, time.time_ns() // 1_000_000)
        try:
            self._carry_out(step)
        except CommitFailed as exc:
            self.journal.abandon(step, exc)
        parked, self._parked_at_once = self._parked_at_once, []
        if parked and self.core is not None and parked[0].session_id == self.core.session_id:
            self._step_all(parked)  # what the executor would have said with `Parked`

    def _carry_out(self, step: Step, inline: bool = False) -> None:
        """Carry out `step` (brain/sessions/carry_out.py says in which order). `inline`: on the
        activation's thread (brain/actors/session/inline.py), whose guest waits for it; the
        spans of its commits are then made at the actor's next step (BRAIN_OTEL)."""
        carry_out(step, Mode.INLINE if inline else Mode.FULL,
                  self._inline_hands if inline else self._hands)

    def _act(self, action: Any) -> None:
        if isinstance(action, StartActivation):
            self._start_activation(action)
        elif isinstance(action, StopActivation):
            if self.stopper is not None:
                self.stopper.stop()
        elif isinstance(action, SuspendActivation):
            self.suspension.suspend_activation()
        elif isinstance(action, ResumeActivation):
            self.suspension.resume_activation(action)
        elif isinstance(action, RemoveFiles):
            self.journal.close()
            shutil.rmtree(self.session_dir, ignore_errors=True)
            shutil.rmtree(self.settings.environments_path / self.core.session_id,
                          ignore_errors=True)
            forget_damage(self.settings.data_path, self.core.session_id)
        elif isinstance(action, Telemetry):
            sink = self.settings.telemetry_sink
            if sink is not None:
                with open(sink, "a", encoding="utf-8") as out:
                    out.write(json.dumps(action.line) + "\n")

    def _start_activation(self, start: StartActivation) -> None:
        self.start_agentloop(start.turn, start.agentloop, start.payload,
                             monotonic_deadline(start.deadline_ms))

    def start_agentloop(self, turn: int, agentloop: dict[str, Any], payload: dict[str, Any],
                        deadline: float | None, replay: Any = None) -> None:
        """Run the Agentloop in its thread: a turn's first activation, or (with `replay`) its
        resumption in a fresh instance."""
        from brain.actors.session.runaway import RunawayWatch
        from brain.agentloop import ActivationStopper  # wasmtime stays out of web workers

        self.stopper = stopper = ActivationStopper()
        self._activations += 1
        self.activation = self._activations
        runtime = agentloop_runtime(self.settings)
        start_activation(
            self.bridge,
            lambda guest_call: activate_recorded(runtime, agentloop, payload,
                                                 guest_call, deadline, stopper),
            turn,
            self.inline.guest_call,
            self.activation,
            replay,
            RunawayWatch(self.core.session_id, turn, str(agentloop.get("name")),
                         self.settings.compute_warn_secs),
        )

    def _reply(self, reply: ClientReply | GuestAnswer) -> None:
        if isinstance(reply, GuestAnswer):
            call = self.guest_calls.pop(reply.call_id, None)
            if call is not None:
                call.respond(reply.result)
        elif reply.error is not None:
            self.send(reply.requester.reply_to,
                      Reply(reply.requester.request_id, error_code=reply.error.code,
                            error_message=reply.error.message))
        else:
            self.send(reply.requester.reply_to, Reply(reply.requester.request_id,
                                                      body=reply.body))

    def _flush_metrics(self) -> None:
        if not self.metrics:
            return
        counters, observations = self.metrics.take()
        metrics = self.services.get(METRICS_GLOBAL_NAME)
        if metrics is not None:
            self.send(metrics, MetricsReport(f"session-{self.core.session_id}", counters,
                                             observations))


GLOBAL_NAME_OF = {
    Target.MODEL_EXECUTOR: MODEL_EXECUTOR_GLOBAL_NAME,
    Target.TOOL_EXECUTOR: TOOL_EXECUTOR_GLOBAL_NAME,
    Target.ENVIRONMENT_EXECUTOR: ENVIRONMENT_EXECUTOR_GLOBAL_NAME,
    Target.WEBHOOK_EXECUTOR: WEBHOOK_EXECUTOR_GLOBAL_NAME,
}
"""Where each role the core sends to is found: the global name of the shared actor whose
address the registry handed this actor (`Delivered.services`)."""


class ActorHands:
    """What carrying out a Step needs, done by the session actor (brain/sessions/carry_out.py).

    One per actor, and one for the activation's thread (`inline`), whose Steps hold only
    records and one guest's answer; that one leaves the trace spans of its commits to the
    actor's next Step."""

    def __init__(self, actor: SessionActor, inline: bool = False) -> None:
        self._actor = actor
        self._inline = inline

    def commit(self, records: tuple[dict[str, Any], ...]) -> None:
        self._actor.journal.commit(records)

    def adopt(self, state: SessionState) -> None:
        self._actor.core = state

    def send(self, target: str, messages: list[Any]) -> None:
        actor = self._actor
        messages, parked = actor._park_at_once.mark(messages, os.environ)
        actor._parked_at_once.extend(parked)  # stepped once this step is carried out
        actor.send(actor.services[GLOBAL_NAME_OF[target]],
                   messages[0] if len(messages) == 1 else EffectBatch(tuple(messages)))

    def act(self, action: Any) -> None:
        self._actor._act(action)

    def answer(self, reply: ClientReply | GuestAnswer) -> None:
        self._actor._reply(reply)

    def answered(self) -> None:
        spans = self._actor.otel_spans
        if spans is not None and not self._inline:  # an inline step's wait for the next
            spans.flush()  # the spans of this step's commits, after its answers

    def checkpoint(self) -> None:
        self._actor.journal.checkpoint()

    def arm(self, secs: float, payload: Any) -> None:
        self._actor.wakeupAfter(secs, (self._actor.lease, payload))

    def note(self, text: str) -> None:
        log.warning("session %s: %s", self._actor.core.session_id, text)

    def release(self, message: Any) -> None:
        self._actor.pool.release(message)  # the metrics go with it, to the registry

    def at_rest(self) -> None:
        self._actor._flush_metrics()  # a session kept resident reports after each piece of work
