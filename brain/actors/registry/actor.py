"""The Registry actor: one per actor system (globalName), the router to session actors.

It hands a warm session actor from its pool (brain/actors/registry/pool.py) to a session as it
opens,
forwards every command to it, and takes the actor back when it says it has let go of its
session (`Released`: journal closed, so the writer lock is free) and every command forwarded to
it was among those it handled. Until then commands for the session still go to that actor,
which opens the session again for one that crossed its release: there is never more than one
actor per session.
The pool is refilled by forks made from a timer when no command came in for a moment
(brain/actors/registry/forks.py: when the registry forks).

Capacity (brain/actors/registry/admission.py): at most `BRAIN_MAX_SESSION_ACTORS` sessions are
served by
an actor at once. A command for a session beyond that, or while no warm actor waits, joins the
admission backlog (turns web workers admitted without an actor, `RunAdmitted`, wait there too),
and the next actor that frees or is forked serves it. Forks are made one per timer tick, never
on a message's path, so a burst's commands are not queued behind them. A command that waited
`BRAIN_ADMISSION_WAIT_SECS`, or that finds the backlog full, is refused `overloaded` (503); an
admitted turn never is. It never touches a journal and never waits on anybody, so it stays
responsive however slow a session is.

Suspended turns (brain/sessions/suspension.py): a session actor that let its session go with a
turn waiting on parked effects hands the turn over in its `Released`; the registry keeps it,
with its deadline, and gives it to the actor that opens the session next, with the first
command forwarded there (`Delivered.first`, `.suspended`). Executors send parked effects'
outcomes here; each is forwarded like a command (`Outcomes`), opening the session if no actor
holds it, and never refused. A suspended turn whose deadline passes gets `ExpireTurn`
(brain/actors/registry/suspended_turns.py keeps them).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from thespian.actors import ActorExitRequest, ChildActorExited, WakeupMessage

from brain.actors.admission_board import BoardWriter
from brain.actors.convention import accepts_member
from brain.actors.registry.admission import NEW_WORK, Backlog
from brain.actors.registry.admitted_starts import DeferredStarts
from brain.actors.registry.askers import Askers
from brain.actors.registry.forks import ForkForBacklog, PoolForks, configured_modules
from brain.actors.registry.lost_effects import EFFECTS_HELD_BY
from brain.actors.registry.pool import PooledActor, SessionActorPool
from brain.actors.registry.suspended_turns import SuspendedTurns
from brain.actors.thespian.exit_status import exit_status
from brain.actors.trace import TracedDispatcher
from brain.cpu_idle import CpuIdle, cpu_actors
from brain.memory_budget import RETRY_AFTER_SECS as MEMORY_RETRY_AFTER_SECS
from brain.memory_budget import MemoryBudget
from brain.metrics import MetricBatch
from brain.protocol.effects import EffectDone, OutcomeBatch, ParkAll
from brain.protocol.messages import (
    METRICS_GLOBAL_NAME,
    MODEL_EXECUTOR_GLOBAL_NAME,
    SHARED_ACTOR_ROLES,
    TOOL_EXECUTOR_GLOBAL_NAME,
    AdmittedTurns,
    Delivered,
    EffectsLost,
    ExpireTurn,
    MetricsReport,
    Outcomes,
    Recover,
    RecoverSessions,
    RefillPool,
    Released,
    Reply,
    ReportRelease,
    RunAdmitted,
    Services,
    SharedActorReplaced,
    ToSession,
    WebhookRecord,
)
from brain.settings import Settings

log = logging.getLogger(__name__)

SWEEP_SECS = 1.0


METRICS_FLUSH_SECS = 0.5
"""How often the metric deltas released session actors handed over go to the MetricsActor."""


@dataclass(frozen=True)
class FlushMetrics:
    """The registry's own timer: pass the released sessions' metric deltas on."""


@dataclass(frozen=True)
class SweepBacklog:
    """The registry's own timer: refuse commands that waited too long for an actor."""


@dataclass(frozen=True)
class StartAdmitted:
    """The registry's own timer: the admitted turns held back may start now."""


@dataclass(frozen=True)
class SuspendedDeadlines:
    """The registry's own timer: a suspended turn's deadline may have passed."""


@dataclass
class SessionSlot:
    actor: PooledActor
    forwarded: int = 0  # commands sent to the actor since it (re)opened the session
    asked_to_report: bool = False  # ReportRelease sent since the last command forwarded
    fresh: bool = True  # nothing forwarded yet: the first Delivered carries the suspension
    askers: Askers = field(default_factory=Askers)  # answered by the recovery if it dies


class Registry(PoolForks, TracedDispatcher):
    trace_name = "registry"

    @staticmethod
    def actorSystemCapabilityCheck(capabilities: dict, requirements: dict) -> bool:
        """In a convention, a member's registry is made on that member alone (so is found
        from any member by its requirements; brain/actors/convention.py)."""
        return accepts_member(capabilities, requirements)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slots: dict[str, SessionSlot] = {}
        self._services: dict[str, Any] = {}
        settings = Settings.from_env()
        self._cpu_actors = cpu_actors()  # past this many, fork only while a CPU idles
        self._pool = SessionActorPool(settings.session_pool_size, settings.session_actor_sessions,
                                      keep=self._cpu_actors)
        self._last_command = 0.0
        self._refill_armed = False
        self._modules = configured_modules(settings)  # what a fork warms up with
        self._fill_waiter: Any = None  # who asked for FillPool, until its actors are warm
        self._warming = 0
        self._max_serving = settings.max_session_actors
        self._backlog = Backlog(settings.admission_backlog, settings.admission_wait_secs)
        self._board = BoardWriter(settings.data_path)
        self._fork_armed = False
        self._last_fork = 0.0
        self._sweep_armed = False
        self._metrics = MetricBatch()  # deltas from Released, until the next FlushMetrics
        self._memory = MemoryBudget(settings.memory_reserve_mb)
        self._cpu_idle = CpuIdle()
        self._deferred = DeferredStarts()  # admitted turns held back during a burst
        self._cpus = os.cpu_count() or 1  # past this many sessions at once, CPU is what runs out
        self._suspended = SuspendedTurns()  # the turns of sessions no actor holds
        self._stopping = False  # ActorExitRequest received: the actor system is stopping
        self._retired: list[Any] = []  # session actors asked to exit, until they have
        self._on_timer: dict[type, Callable[[], None]] = {
            FlushMetrics: self._flush_metrics,
            ForkForBacklog: self._fork_for_backlog,
            SweepBacklog: self._sweep_backlog,
            StartAdmitted: self._admitted_due,
            SuspendedDeadlines: self._expire_suspended,
            RefillPool: self._refill,
        }

    def receiveMsg_Services(self, msg: Services, sender: Any) -> None:
        self._services = dict(msg.addresses)

    def receiveMsg_SharedActorReplaced(self, msg: SharedActorReplaced, sender: Any) -> None:
        """An executor died and boot replaced it: from now on every delivery names the new
        one, and every session that may wait for an effect the dead one held is told so
        (`EffectsLost`) before any later command reaches it. A session an actor holds may have
        such an effect in flight; a suspended turn has it if its kept turn says so."""
        self._services = dict(msg.addresses)
        kinds = EFFECTS_HELD_BY.get(msg.name, ())
        if not kinds:
            return
        sessions = [*self._slots, *self._suspended.waiting_on(kinds)]
        lost = EffectsLost(SHARED_ACTOR_ROLES[msg.name], kinds)
        for session_id in dict.fromkeys(sessions):
            self.receiveMsg_ToSession(ToSession(f"lost-{msg.name}-{session_id}", session_id,
                                                lost), None)

    def receiveMsg_ToSession(self, msg: ToSession, sender: Any) -> None:
        self._last_command = time.monotonic()
        if msg.reply_to is not None:
            sender = msg.reply_to  # the web worker's reply inbox (brain/web/reply_inbox.py)
        if msg.session_id in self._deferred and not isinstance(msg.command, RunAdmitted):
            self._deferred.take(msg.session_id)  # its admitted turn goes first
            self._start_admitted([msg.session_id])
        if isinstance(msg.command,
                      RunAdmitted | Outcomes | EffectsLost | ExpireTurn | WebhookRecord):
            sender = None  # fire-and-forget: nobody waits for an answer
        if isinstance(msg.command, NEW_WORK) and self._memory.exhausted():
            self._refuse(msg, sender, self._memory.refusal_message(), MEMORY_RETRY_AFTER_SECS)
            return
        slot = self._slots.get(msg.session_id)
        if slot is not None:
            self._forward(slot, msg, sender)
            return
        if msg.session_id in self._backlog or not self._can_open():
            was_empty = not self._backlog
            if not self._backlog.add(msg, sender):
                self._refuse(msg, sender, "every session actor is busy and the admission "
                                          "backlog is full; retry after Retry-After")
            self._backlog_changed()
            if was_empty:  # while it stays, actors see it on the board and report at once
                self._ask_for_reports()
                self._park_everything()
            return
        self._observe("brain_admission_wait_seconds", 0.0)  # an actor was free
        self._forward(self._open(msg.session_id), msg, sender)

    def receiveMsg_EffectDone(self, msg: EffectDone, sender: Any) -> None:
        self._route_outcomes((msg,))

    def receiveMsg_OutcomeBatch(self, msg: OutcomeBatch, sender: Any) -> None:
        self._route_outcomes(msg.outcomes)

    def _route_outcomes(self, outcomes: tuple[EffectDone, ...]) -> None:
        """Parked effects' outcomes, one command per session, to whoever holds it now."""
        by_session: dict[str, list[EffectDone]] = {}
        for done in outcomes:
            by_session.setdefault(done.session_id, []).append(done)
        for session_id, dones in by_session.items():
            self.receiveMsg_ToSession(ToSession(f"outcome-{session_id}-{dones[0].started}",
                                                session_id, Outcomes(tuple(dones))), None)

    def receiveMsg_AdmittedTurns(self, msg: AdmittedTurns, sender: Any) -> None:
        """Take the batch into the registry's care, then say so: until the worker hears that,
        it sends the batch again. A repeat is harmless: one already held or waiting in the
        backlog is not queued twice, and an actor given one for a turn that runs or ran does
        nothing. The turns start once the submits are quiet
        (brain/actors/registry/admitted_starts.py)."""
        fresh = [s for s in msg.session_ids
                 if s not in self._deferred and not self._backlog.owes(s, RunAdmitted)]
        if self._deferred.add(fresh, time.monotonic()):
            self.wakeupAfter(self._deferred.next_check(time.monotonic()), StartAdmitted())
        if sender is not None:
            self.send(sender, Reply(msg.request_id, body={"taken": len(msg.session_ids)}))

    def _start_admitted(self, session_ids: list[str]) -> None:
        for session_id in session_ids:
            self.receiveMsg_ToSession(ToSession(f"admitted-{session_id}", session_id,
                                                RunAdmitted()), None)

    def _admitted_due(self) -> None:
        now = time.monotonic()
        due = self._deferred.due(now)
        if due:
            self._start_admitted(due)
        elif len(self._deferred):
            self.wakeupAfter(self._deferred.next_check(now), StartAdmitted())

    def receiveMsg_RecoverSessions(self, msg: RecoverSessions, sender: Any) -> None:
        """The start-up scan's sessions, taken and confirmed the same way (a repeated
        recovery records nothing: the first one did)."""
        self._take_owed(msg.request_id, msg.session_ids, "recover", Recover, sender)

    def _take_owed(self, request_id: str, session_ids: tuple[str, ...], label: str,
                   kind: type, sender: Any) -> None:
        for session_id in session_ids:
            if not self._backlog.owes(session_id, kind):
                self.receiveMsg_ToSession(ToSession(f"{label}-{session_id}", session_id,
                                                    kind()), None)
        if sender is not None:
            self.send(sender, Reply(request_id, body={"taken": len(session_ids)}))

    def _can_open(self) -> bool:
        return len(self._slots) < self._max_serving and bool(self._pool.idle)

    def _open(self, session_id: str) -> SessionSlot:
        actor = self._pool.take(session_id)
        assert actor is not None, "_open is called only with an idle actor"
        slot = SessionSlot(actor)
        self._slots[session_id] = slot
        self._arm_refill()
        return slot

    def _refuse(self, msg: ToSession, sender: Any, message: str,
                retry_after: int | None = None) -> None:
        if sender is not None:
            self.send(sender, Reply(msg.request_id, error_code="overloaded",
                                    error_message=message, retry_after=retry_after))

    # --- the backlog --------------------------------------------------------------------------

    def _serve_backlog(self) -> None:
        """Hand idle actors to the sessions that waited longest, while capacity lasts."""
        while self._backlog and self._can_open():
            session_id, waiting, waited = self._backlog.pop(self._pool.kept_by_idle)
            for seconds in waited:
                self._observe("brain_admission_wait_seconds", seconds)
            slot = self._open(session_id)
            for msg, sender in waiting:
                self._forward(slot, msg, sender)
        self._backlog_changed()

    def _backlog_changed(self) -> None:
        self._board.publish(len(self._backlog), len(self._slots))
        if not self._backlog:
            return
        self._arm_fork_for_backlog()
        if not self._sweep_armed:
            self._sweep_armed = True
            self.wakeupAfter(SWEEP_SECS, SweepBacklog())

    def _sweep_backlog(self) -> None:
        self._sweep_armed = False
        for msg, sender in self._backlog.expired(time.monotonic()):
            self._refuse(msg, sender, "no session actor was free in time; retry after "
                                      "Retry-After")
        self._backlog_changed()

    def receiveMsg_WakeupMessage(self, msg: WakeupMessage, sender: Any) -> None:
        """Each of the registry's own timers, by the type of its payload."""
        handler = self._on_timer.get(type(msg.payload))
        if handler is not None:
            handler()

    def _ask_for_reports(self) -> None:
        """Work waits for an actor: ask every actor that may hold an unreported release
        (brain/actors/session/release_report.py) to report it now rather than when its timer says.
        One that is serving its session reports at that session's next release."""
        for slot in self._slots.values():
            if not slot.asked_to_report:
                slot.asked_to_report = True
                self.send(slot.actor.address, ReportRelease())

    def _park_everything(self) -> None:
        """Work waits for an actor: turns waiting on effects let theirs go now rather than
        after the suspension grace (executors park every effect that starts meanwhile)."""
        for name in (MODEL_EXECUTOR_GLOBAL_NAME, TOOL_EXECUTOR_GLOBAL_NAME):
            executor = self._services.get(name)
            if executor is not None:
                self.send(executor, ParkAll())

    def _forward(self, slot: SessionSlot, msg: ToSession, sender: Any) -> None:
        slot.forwarded += 1
        slot.asked_to_report = False
        first, slot.fresh = slot.fresh, False
        suspended = self._suspended.take(msg.session_id) if first else None
        if suspended is not None:
            slot.askers.resumed(suspended)
        slot.askers.forwarded(msg.request_id, msg.command, sender)
        self.send(slot.actor.address, Delivered(msg.request_id, msg.session_id, msg.command,
                                                sender, self._services,
                                                len(self._slots) > self._cpus, first,
                                                suspended))

    # --- suspended turns ------------------------------------------------------------------------

    def _keep_suspended(self, session_id: str, turn: Any) -> None:
        if self._suspended.keep(session_id, turn):
            self._arm_deadlines()

    def _arm_deadlines(self) -> None:
        secs = self._suspended.timer_secs(time.time_ns() // 1_000_000)
        if secs is not None:
            self.wakeupAfter(secs, SuspendedDeadlines())

    def _expire_suspended(self) -> None:
        for session_id, turn in self._suspended.expired(time.time_ns() // 1_000_000):
            self.receiveMsg_ToSession(ToSession(f"expire-{session_id}-{turn}", session_id,
                                                ExpireTurn(turn)), None)
        self._arm_deadlines()

    def receiveMsg_Released(self, msg: Released, sender: Any) -> None:
        """The actor has dropped the session. It is free only when it handled every command
        forwarded to it; otherwise the ones still on their way open the session there again
        (it counts their handling from zero), and it will say Released once more."""
        self._last_command = time.monotonic()
        self._take_metrics(msg)
        slot = self._slots.get(msg.session_id)
        if slot is None or slot.actor.address != sender:
            return
        slot.actor.served += msg.opens - 1  # reopened in the actor before this report
        if slot.forwarded != msg.handled:
            slot.forwarded -= msg.handled
            return
        del self._slots[msg.session_id]
        if msg.suspended is not None:
            self._keep_suspended(msg.session_id, msg.suspended)
        if not self._pool.returned(slot.actor, msg.session_id):
            self._retired.append(sender)
            self.send(sender, ActorExitRequest())  # recycled, or more idle than the pool holds
            self._arm_refill()
        self._serve_backlog()

    def _take_metrics(self, msg: Released) -> None:
        if not (msg.counters or msg.observations):
            return
        self._metric_batch().absorb(msg.counters, msg.observations)

    def _count_exit(self, actor: str) -> None:
        self._metric_batch().inc("brain_actor_exits_total", actor=actor)

    def _observe(self, name: str, value: float) -> None:
        self._metric_batch().observe(name, value)

    def _metric_batch(self) -> MetricBatch:
        """The deltas the next FlushMetrics sends; its timer is armed by the first of them."""
        if not self._metrics:
            self.wakeupAfter(METRICS_FLUSH_SECS, FlushMetrics())
        return self._metrics

    def _flush_metrics(self) -> None:
        counters, observations = self._metrics.take()
        metrics = self._services.get(METRICS_GLOBAL_NAME)
        if metrics is not None and (counters or observations):
            self.send(metrics, MetricsReport("released-sessions", counters, observations))

    def receiveMsg_ActorExitRequest(self, msg: ActorExitRequest, sender: Any) -> None:
        """The actor system is stopping: its session actors are asked to exit with it, so their
        exits from now on are expected, not failures."""
        self._stopping = True

    def receiveMsg_ChildActorExited(self, msg: ChildActorExited, sender: Any) -> None:
        """A session actor's process ended. One the registry retired, or one that exits as the
        actor system stops, is simply gone; any other was killed or crashed: logged, counted,
        replaced by the pool's refill, and the session it held (if any) is recovered at once,
        its open turn failed `interrupted` as after a restart, and the requests it took answered
        (brain/actors/registry/askers.py)."""
        if self._stopping:
            return
        self._pool.lost(msg.childAddress)
        self._arm_refill()
        if msg.childAddress in self._retired:
            self._retired.remove(msg.childAddress)
            return
        held = [session_id for session_id, slot in self._slots.items()
                if slot.actor.address == msg.childAddress]
        log.error("a session actor exited without being asked to (%s); %s",
                  exit_status(msg), f"recovering session {held[0]}" if held
                  else "it held no session")
        self._count_exit("session")
        for session_id in held:
            slot = self._slots.pop(session_id)
            self._pool.forget(slot.actor)
            # Record now what it left (an open turn fails `interrupted`; a turn admitted in
            # this run that it never started runs), rather than at the next command.
            self._backlog.put_first(session_id, [(ToSession(
                f"recover-{session_id}", session_id, Recover(slot.askers.orphans())), None)])
        self._serve_backlog()

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == "ping":
            self.send(sender, "pong")
        elif msg == "stats":
            self.send(sender, {"open_sessions": len(self._slots),
                               "pooled_actors": len(self._pool.idle),
                               "backlog_sessions": len(self._backlog),
                               "suspended_turns": len(self._suspended)})
