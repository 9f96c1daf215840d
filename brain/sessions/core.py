"""The session core: every decision of one session, as a pure function `step(state, input, now)`.

No actor, no disk, no clock: the session actor (brain/actors/session/actor.py) turns each message it
receives into an input, calls `step`, and carries out the Step it returns (state.py says in which
order). Here are the commands and the idle rule; a turn's life is in turns.py and the
Agentloop's guest calls in guest_ops.py. Records are built by brain/sessions/records.py and get
their `seq` and `at` here, in `Tx.commit`, exactly as the journal will assign them, so the core
folds them into its projection and decides on what is about to be durable.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from brain import errors
from brain.effects import Outcome
from brain.protocol.effects import EffectDone, Parked, RunEnvironmentOp
from brain.protocol.mcp import ForgetMcpSession
from brain.protocol.messages import (
    CancelGrace,
    CancelTurn,
    CreateSession,
    DeleteSession,
    EffectsLost,
    EndSession,
    ExpireTurn,
    IdleTimeout,
    Orphan,
    Outcomes,
    Recover,
    ReleaseMe,
    RunAdmitted,
    StartTurn,
    TurnDeadline,
    WebhookRecord,
)
from brain.protocol.records import TURN_FAILED
from brain.protocol.targets import Target
from brain.sessions import guest_ops, records, suspension, turns, webhooks
from brain.sessions.recovery import interrupted_work
from brain.sessions.state import (
    ENVIRONMENT_PHASES,
    REGISTRY,
    ActivationFinished,
    AdmittedTurn,
    Command,
    Damaged,
    EnvironmentWork,
    GuestCall,
    Opened,
    Phase,
    RecordedOutcome,
    RemoveFiles,
    Requester,
    SessionState,
    Step,
)
from brain.sessions.tx import Tx
from brain.sessions.views import turn_result

SETTLED = ("ended", "failed")


def step_all(state: SessionState, events: list[Any], now_ms: int) -> Step:
    """What several events that arrived together come to, as one Step: each is stepped in
    order, and their records form one batch, committed before any send, action or reply of
    any of them (group commit). Each of those still follows its own fence, only later."""
    steps = []
    for event in events:
        steps.append(step(state, event, now_ms))
        state = steps[-1].state
    if len(steps) == 1:
        return steps[0]
    return Step(state=state,
                records=tuple(r for s in steps for r in s.records),
                sends=tuple(x for s in steps for x in s.sends),
                actions=tuple(x for s in steps for x in s.actions),
                replies=tuple(x for s in steps for x in s.replies),
                checkpoint=any(s.checkpoint for s in steps),
                timers=tuple(x for s in steps for x in s.timers),
                notes=tuple(x for s in steps for x in s.notes))


def step(state: SessionState, event: Any, now_ms: int) -> Step:
    """What `event` comes to in `state`, at wall-clock time `now_ms` (epoch milliseconds)."""
    tx = Tx(state, now_ms)
    was_idle = state.idle
    _HANDLERS[type(event)](tx, event)
    if tx.state.phase is Phase.IDLE and tx.state.waiting_ends:
        _answer_waiting_ends(tx)  # an end that arrived while work was in flight runs now
    _idle_rule(tx, was_idle, event)
    return tx.done()


# --- the journal opened or refused ----------------------------------------------------------


ADMISSION = "admission"
"""The requester of an admission made with no actor: its reply is the HTTP answer."""


def admit(state: SessionState, command: StartTurn, now_ms: int) -> Step:
    """An async submit admitted without an actor (brain/web/admission.py): the Step holds
    `turn_started` and the receipt, or the refusal (ended, failed, busy), and nothing else.
    `state` is the session just `Opened` with nothing in flight."""
    tx = Tx(state, now_ms)
    turns.admit(tx, Requester(ADMISSION, ""), command)
    return tx.done()


def admitted(projection: Any, sequence: int) -> bool:
    """Whether the open turn `sequence` has run nothing yet: an admitted turn's shape."""
    return (projection.open_turn == sequence and projection.open_activation is None
            and not projection.unfinished_effects and projection.status == "running")


def _opened(tx: Tx, opened: Opened) -> None:
    """Restart rule: fail what a crash interrupted, never rerun it. A turn admitted in this
    run of the server (never one a crash left; the actor tells them apart) starts instead,
    and a turn suspended in this run (the registry hands it back) carries on."""
    tx.set(phase=Phase.IDLE, projection=opened.projection, damage=None, interrupted_turn=None)
    turn: AdmittedTurn | None = opened.admitted
    if turn is not None and admitted(opened.projection, turn.sequence):
        turns.begin(tx, turn.sequence, turn.input, None, turn.limits)
        return
    suspended = opened.suspended
    if suspended is not None:
        if suspension.matches(suspended, opened.projection):
            suspension.restore(tx, suspended)
            return
        tx.notes.append(f"the suspended turn {suspended.sequence} does not match the journal; "
                        "it is recorded as interrupted")
    interrupted = interrupted_work(opened.projection)
    if interrupted:
        committed = tx.commit(*interrupted)
        webhooks.owe_deliveries(tx, committed)  # an interrupted turn's too
        tx.set(interrupted_turn=next((r for r in committed if r["kind"] == TURN_FAILED), None))
        tx.checkpoint = True


def _damaged(tx: Tx, damaged: Damaged) -> None:
    """A damaged journal takes no write: closed until it is deleted (or opens clean again)."""
    tx.set(phase=Phase.CLOSED, projection=None, damage=damaged.message)


# --- commands -------------------------------------------------------------------------------


def _command(tx: Tx, command: Command) -> None:
    tx.set(handled=tx.state.handled + 1)
    delivered = command.delivered
    who = Requester(delivered.reply_to, delivered.request_id)
    state = tx.state
    if command.refused is not None:
        tx.reply(who, error=command.refused)
    elif command.journal is True and isinstance(delivered.command, CreateSession):
        tx.reply(who, error=errors.InvalidRequest("session already exists"))
    elif command.journal is False and not isinstance(delivered.command, CreateSession):
        tx.reply(who, error=errors.NotFound("no such session"))
    elif state.phase is Phase.CLOSED and state.damage is not None:
        if isinstance(delivered.command, DeleteSession):
            # A damaged journal cannot record teardown, and an effect that cannot be
            # journaled first is never sent: the files go, no Environment op runs.
            tx.act(_remove_files(tx))
            tx.reply(who, body={})
        else:
            tx.reply(who, error=errors.SessionDamaged(state.damage))
    elif state.phase is Phase.CLOSED:
        tx.reply(who, error=errors.Internal("the session's journal is not open"))
    elif state.projection.config is None and not isinstance(delivered.command, CreateSession):
        # A journal with no session_created (a create that crashed before its first commit)
        # holds no session: nothing may be written to it but a creation.
        tx.reply(who, error=errors.NotFound("no such session"))
    else:
        _COMMANDS[type(delivered.command)](tx, who, command)
        suspension.keep_suspended(tx)


def _create(tx: Tx, who: Requester, command: Command) -> None:
    if tx.state.projection.last_seq:
        tx.reply(who, error=errors.InvalidRequest("session already exists"))
        return
    create: CreateSession = command.delivered.command
    transcript = create.transcript
    batch = [records.session_created(create.config, len(transcript))]
    if create.forked_from is not None:  # a fork's journal names its parent first
        batch.insert(0, records.forked_from(**create.forked_from))
    if transcript:
        batch.append(records.transcript_changed(
            {"start": 0, "items": transcript, "length": len(transcript)}))
    batch.extend(records.kv_put(key, value) for key, value in create.kv.items())
    tx.commit(*batch)
    if not _begin_environments(tx, "setup", who):
        _finish_create(tx, who, ())


def _finish_create(tx: Tx, who: Requester, failures: tuple[str, ...]) -> None:
    if failures:
        tx.commit(records.session_failed("creation", "; ".join(failures)))
    tx.checkpoint = True
    tx.reply(who, body=tx.view())


def _end(tx: Tx, who: Requester, command: Command | None = None) -> None:
    state = tx.state
    if state.projection.status in SETTLED:
        tx.reply(who, body=tx.view())
        return
    if not state.idle:
        tx.set(waiting_ends=(*state.waiting_ends, who))  # answered when the work is over
        return
    tx.commit(records.session_ending())  # before detach: no command gets in now
    if not _begin_environments(tx, "detach", who):
        _finish_end(tx, who, ())


def _finish_end(tx: Tx, who: Requester, failures: tuple[str, ...]) -> None:
    # A failed detach is recorded and does not prevent the session from ending.
    tx.commit(records.session_ended())
    tx.checkpoint = True
    _forget_mcp(tx)
    tx.reply(who, body=tx.view())


def _forget_mcp(tx: Tx) -> None:
    """A session done with its MCP servers: the Tool executor forgets its credentials and stops
    its own stdio servers (brain/tools/mcp/)."""
    if (tx.state.projection.config or {}).get("mcp_servers"):
        tx.send(Target.TOOL_EXECUTOR, ForgetMcpSession(tx.state.session_id))


def _answer_waiting_ends(tx: Tx) -> None:
    waiting = tx.state.waiting_ends
    tx.set(waiting_ends=())
    for who in waiting:
        _end(tx, who)


def _delete(tx: Tx, who: Requester, command: Command) -> None:
    state = tx.state
    if state.projection.status not in SETTLED:
        tx.reply(who, error=errors.SessionActive("end the session before deleting it"))
    elif state.environments is not None:
        tx.reply(who, error=errors.SessionBusy("an Environment operation is in flight"))
    elif not _begin_environments(tx, "teardown", who, only=command.set_up):
        _finish_delete(tx, who, ())


def _finish_delete(tx: Tx, who: Requester, failures: tuple[str, ...]) -> None:
    if failures:
        # The session and its Environment record remain; no automatic retry.
        tx.checkpoint = True
        tx.reply(who, error=errors.TeardownFailed(
            f"Environment teardown failed ({'; '.join(failures)}); "
            "retry with a new Idempotency-Key"))
        return
    _forget_mcp(tx)
    tx.act(_remove_files(tx))
    tx.reply(who, body={})


def _remove_files(tx: Tx) -> RemoveFiles:
    tx.set(phase=Phase.CLOSED, projection=None, damage=None)
    return RemoveFiles()


def _recover(tx: Tx, who: Requester, command: Command) -> None:
    tx.reply(who, body=tx.view())  # the open before this recorded the interrupted work
    recover: Recover = command.delivered.command
    for orphan in recover.orphans:
        _answer_orphan(tx, orphan)


def _answer_orphan(tx: Tx, orphan: Orphan) -> None:
    """A request the session's dead actor took and never answered. A sync send whose turn this
    open failed `interrupted` gets that TurnResult, as its turn really ended; anything else
    gets an error, since what it did (if anything) is only in the session's events now. One
    answered already is answered again here; the web's reply inbox drops that second answer."""
    asker = Requester(orphan.reply_to, orphan.request_id)
    failed = tx.state.interrupted_turn
    if orphan.waits_for_turn and failed is not None:
        tx.reply(asker, body=turn_result(tx.state.session_id, failed["started"], failed))
    else:
        tx.reply(asker, error=errors.Internal(
            "the session's actor stopped while it handled this request; the session is "
            "recovered and its events show what was recorded"))


def _run_admitted(tx: Tx, who: Requester, command: Command) -> None:
    """Nothing more: opening the journal started the admitted turn (or it ran already)."""


def _start_turn(tx: Tx, who: Requester, command: Command) -> None:
    turns.start(tx, who, command.delivered.command)


def _cancel_turn(tx: Tx, who: Requester, command: Command) -> None:
    turns.cancel(tx, who)


def _outcomes(tx: Tx, who: Requester, command: Command) -> None:
    """Outcomes of parked effects, routed by the registry: each as if it came from its
    executor (the turn may be suspended or still held here)."""
    for done in command.delivered.command.outcomes:
        _effect_done(tx, done)


def _effects_lost(tx: Tx, who: Requester, command: Command) -> None:
    """The executor that held some of this session's effects exited: each of them still
    awaited ends `unknown` (it may have happened, and is never sent again), exactly as a
    restart settles them, and the turn or Environment work goes on from there."""
    lost: EffectsLost = command.delivered.command
    for done in lost_outcomes(tx.state, lost):
        _effect_done(tx, done)


def lost_outcomes(state: SessionState, lost: EffectsLost) -> list[EffectDone]:
    """The `unknown` outcome of every effect of `lost.kinds` that `state` still waits for."""
    message = (f"the {lost.actor} exited while this was in flight; it may have happened, "
               "and it is not sent again")
    started: list[int] = []
    if state.turn is not None:
        started += [seq for seq, pending in sorted(state.turn.pending.items())
                    if pending.effect in lost.kinds]
    if state.environments is not None and "environment_op" in lost.kinds:
        started += sorted(state.environments.waiting)
    return [EffectDone(state.session_id, seq, Outcome.UNKNOWN,
                       result={"content": message, "is_error": True},
                       error={"message": message}) for seq in started]


def _expire_turn(tx: Tx, who: Requester, command: Command) -> None:
    turns.deadline(tx, TurnDeadline(command.delivered.command.turn))


def _webhook_record(tx: Tx, who: Requester, command: Command) -> None:
    webhooks.record_result(tx, command.delivered.command)


_COMMANDS = {
    CreateSession: _create,
    StartTurn: _start_turn,
    CancelTurn: _cancel_turn,
    EndSession: _end,
    DeleteSession: _delete,
    Recover: _recover,
    RunAdmitted: _run_admitted,
    Outcomes: _outcomes,
    EffectsLost: _effects_lost,
    ExpireTurn: _expire_turn,
    WebhookRecord: _webhook_record,
}


# --- Environment phases ---------------------------------------------------------------------


def _begin_environments(tx: Tx, op: str, who: Requester, only: frozenset[str] | None = None
                        ) -> bool:
    """Journal `op` for every Environment (or those in `only`), then send them; False when
    there are none."""
    environments = [env for env in tx.state.projection.config.get("environments", [])
                    if only is None or env["name"] in only]
    if not environments:
        return False
    started = tx.commit(*(records.environment_op_started(env["name"], op, {})
                          for env in environments))
    tx.set(phase=ENVIRONMENT_PHASES[op],
           environments=EnvironmentWork(op, who, frozenset(r["seq"] for r in started)))
    for record, environment in zip(started, environments, strict=True):
        tx.send(Target.ENVIRONMENT_EXECUTOR,
                RunEnvironmentOp(tx.state.session_id, record["seq"], environment, op, {}))
    return True


def _effect_done(tx: Tx, done: EffectDone) -> None:
    work = tx.state.environments
    if work is not None and done.started in work.waiting:
        _environment_done(tx, work, done)
    elif tx.state.turn is not None and done.started in tx.state.turn.pending:
        turns.effect_done(tx, done)
    else:
        tx.notes.append(f"an outcome nothing waits for any more: {done.started}")


def _environment_done(tx: Tx, work: EnvironmentWork, done: EffectDone) -> None:
    failures = work.failures
    if done.outcome is Outcome.OK:
        tx.commit(records.effect_ended("environment_op", done.started, done.result or {}))
    else:
        message = (done.error or {}).get("message", "")
        tx.commit(records.effect_failed("environment_op", done.started, done.outcome,
                                        {"message": message}))
        failures = (*failures, f"{work.op} failed: {message}")
    waiting = work.waiting - {done.started}
    if waiting:
        tx.set(environments=replace(work, waiting=waiting, failures=failures))
        return
    tx.set(phase=Phase.IDLE, environments=None)
    _FINISH[work.op](tx, work.requester, failures)


_FINISH = {"setup": _finish_create, "detach": _finish_end, "teardown": _finish_delete}


# --- timers and the idle rule ---------------------------------------------------------------


def _idle_timeout(tx: Tx, timeout: IdleTimeout) -> None:
    if timeout.generation == tx.state.idle_generation:
        tx.set(release_wanted=True)


def _idle_rule(tx: Tx, was_idle: bool, event: Any) -> None:
    """Whenever a command was answered (or refused) or work finished, the session's retention
    starts again (release now, after a TTL, or never); an idle session that may be released
    asks the registry, which grants it only if no command is on its way."""
    state = tx.state
    if not state.idle:
        return
    answered = isinstance(event, Command) or not was_idle
    if answered:
        _schedule_release(tx)
        state = tx.state
    if (answered or isinstance(event, IdleTimeout)) \
            and (state.release_wanted or state.phase is Phase.CLOSED):
        tx.send(REGISTRY, ReleaseMe(state.session_id, state.handled))


def _schedule_release(tx: Tx) -> None:
    state = tx.state
    config = state.projection.config if state.projection is not None else None
    ttl_ms = (config or {}).get("idle_ttl_ms")
    if ttl_ms is None:
        ttl_ms = state.limits.idle_ttl_ms
    generation = state.idle_generation + 1
    tx.set(idle_generation=generation, release_wanted=ttl_ms is None)
    if ttl_ms:  # None: release now; 0: retain indefinitely
        tx.timer(ttl_ms / 1000.0, IdleTimeout(generation))


_HANDLERS: dict[type, Any] = {
    Opened: _opened,
    Damaged: _damaged,
    Command: _command,
    EffectDone: _effect_done,
    Parked: suspension.parked,
    GuestCall: guest_ops.serve,
    ActivationFinished: turns.activation_finished,
    RecordedOutcome: turns.recorded_outcome,
    TurnDeadline: turns.deadline,
    CancelGrace: turns.cancel_grace,
    IdleTimeout: _idle_timeout,
}
