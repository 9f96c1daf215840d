"""The Session actor: the only writer of one session's journal.

States: *closed* (no journal open) → *open, idle* → *open, running* (an Agentloop activation is
in flight) → idle → released. Every effect follows one rule, visible below as `_commit(...)`
followed by `self.send(...)`: the `*_started` record is durable before the effect is sent, and
the outcome is durable before the Agentloop sees it.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thespian.actors import ActorExitRequest, WakeupMessage, WatchMessage

from brain import errors
from brain.actors.bridge import BridgedActor
from brain.actors.messages import (
    ENVIRONMENT_EXECUTOR_GLOBAL_NAME,
    METRICS_GLOBAL_NAME,
    MODEL_EXECUTOR_GLOBAL_NAME,
    TOOL_EXECUTOR_GLOBAL_NAME,
    CancelEffect,
    CancelGrace,
    CancelTurn,
    CreateSession,
    DeleteSession,
    Delivered,
    EndSession,
    EnvironmentOpDone,
    IdleTimeout,
    MetricsReport,
    ModelCallDone,
    Recover,
    ReleaseMe,
    Reply,
    RunEnvironmentOp,
    RunModelCall,
    RunToolCall,
    StartTurn,
    ToolCallDone,
    TurnDeadline,
)
from brain.actors.proctitle import rename_actor_process
from brain.actors.turn import (
    ActivationFinished,
    ActiveTurn,
    PendingHostCall,
    SingleWaiter,
    ToolBatchWaiter,
    start_activation,
)
from brain.journal import CorruptJournal, JournalWriter, SessionReader, fold
from brain.live import LivePublisher
from brain.metrics import MetricBatch
from brain.sessions.environments import environments_set_up
from brain.sessions.extension_events import EventRefused, check_event, extension_record
from brain.sessions.recovery import interrupted_work
from brain.sessions.transcript_diff import context_delta, transcript_delta
from brain.sessions.views import damage_message, session_view, turn_result
from brain.settings import Settings

log = logging.getLogger(__name__)

CANCEL_GRACE_SECS = 10.0  # bounded wait for executors to confirm a cancellation


@dataclass
class EnvironmentPhase:
    """Setup (create), detach (end) or teardown (delete) of every Environment, in flight."""

    op: str
    msg: Delivered
    waiting: set[int]
    failures: list[str] = field(default_factory=list)


_runtime = None


def agentloop_runtime(settings: Settings) -> Any:
    """One AgentloopRuntime per actor process, created after the fork (stack hazard 4)."""
    global _runtime
    if _runtime is None:
        from brain.agentloop import AgentloopRuntime

        # Compiled modules are cached as serialized bytes in a directory only Brain writes, so
        # a freshly forked session actor loads the Agentloop instead of compiling it again.
        cache_dir = settings.data_path / "run" / "wasm-cache"
        cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        _runtime = AgentloopRuntime(memory_limit_bytes=settings.agentloop_memory_mb << 20,
                                    cache_dir=cache_dir)
    return _runtime


def activate_recorded(runtime: Any, agentloop: dict[str, Any], payload: dict[str, Any],
                      host_call: Any, deadline: float | None,
                      stopper: Any = None) -> dict[str, Any]:
    """Run the Agentloop recorded at creation, refusing a module file changed since then."""
    from brain.agentloop import AgentloopError

    try:
        current = runtime.prepare(agentloop["path"])  # hashed only when the file changed
    except (OSError, AgentloopError):
        raise AgentloopError("agentloop_error",
                             f"Agentloop {agentloop['name']!r}: module file "
                             f"{agentloop['path']} cannot be read") from None
    recorded = agentloop.get("sha256")
    if recorded and current != recorded:
        raise AgentloopError("agentloop_error",
                             f"Agentloop {agentloop['name']!r} changed since the session was "
                             f"created (recorded sha256 {recorded[:12]}…, file now "
                             f"{current[:12]}…); create a new session to use the new module")
    return runtime.activate(agentloop["path"], payload, host_call, deadline, stopper)


class SessionActor(BridgedActor):
    trace_name = "session"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = Settings.from_env()
        self.session_id: str | None = None
        self.registry: Any = None
        self.handled = 0
        self.writer: JournalWriter | None = None
        self.projection: Any = None
        self.turn: ActiveTurn | None = None
        self.waiting_ends: list[Delivered] = []  # end waits for active work
        self.phase: EnvironmentPhase | None = None
        self.release_wanted = False
        self.idle_generation = 0
        self.services: dict[str, Any] = {}
        self.live = LivePublisher(self.settings.data_path)
        self.metrics = MetricBatch()

    # --- dispatch ---------------------------------------------------------------------------

    def receiveMsg_Delivered(self, msg: Delivered, sender: Any) -> None:
        self.handled += 1
        self.registry = sender
        if self.session_id is None:
            rename_actor_process(f"session {msg.session_id}")
        self.session_id = msg.session_id
        self.services = msg.services
        handlers = {
            CreateSession: self._create,
            StartTurn: self._start_turn,
            CancelTurn: self._cancel_turn,
            EndSession: self._end,
            DeleteSession: self._delete,
            Recover: self._recover_only,
        }
        try:
            handlers[type(msg.command)](msg)
        except errors.BrainError as exc:
            self._reply(msg.reply_to, msg.request_id, error=exc)
        except CorruptJournal as exc:
            # The writer's open refuses a damaged journal before anything is appended.
            log.error("session %s damaged, %s refused: %s at byte offset %d (sequence %s): %s",
                      self.session_id, type(msg.command).__name__, exc.path, exc.offset,
                      exc.seq, exc.reason)
            self._close_journal()
            self._reply(msg.reply_to, msg.request_id, error=errors.SessionDamaged(
                damage_message(exc, self.settings.data_path)))
        except Exception:
            log.exception("session %s: command %s failed", self.session_id,
                          type(msg.command).__name__)
            self._reply(msg.reply_to, msg.request_id,
                        error=errors.Internal("internal error"))
        if self.turn is None and self.phase is None and not self.waiting_ends:
            # Nothing left running: every command, answered or refused, ends in the session's
            # idle rule (release now, after a TTL, or never), so a refused message cannot
            # leave an actor resident for good.
            self._schedule_release()
        self._release_if_idle()

    def receiveMsg_WatchMessage(self, msg: WatchMessage, sender: Any) -> None:
        for item in self.bridge.drain():
            if isinstance(item, PendingHostCall):
                self._host_call(item)
            elif isinstance(item, ActivationFinished):
                self._finish_turn(item)
        self._release_if_idle()

    def receiveMsg_ModelCallDone(self, msg: ModelCallDone, sender: Any) -> None:
        waiter = self._take_waiter(msg.started)
        if waiter is None:
            return
        if msg.error is None:
            self._commit([{"kind": "model_call_ended", "started": msg.started,
                           "result": msg.result, "outcome": "ok"}])
            waiter.settle(msg.started, msg.result or {})
        else:
            outcome = msg.error.get("outcome", "unknown")
            error = {"message": msg.error.get("message", "")}
            if msg.error.get("status") is not None:
                error["status"] = msg.error["status"]
            self._commit([{"kind": "model_call_failed", "started": msg.started,
                           "error": error, "outcome": outcome}])
            waiter.settle(msg.started, {"error": {"code": "model_call_failed", "outcome": outcome,
                                                  "message": error["message"]}})

    def receiveMsg_ToolCallDone(self, msg: ToolCallDone, sender: Any) -> None:
        waiter = self._take_waiter(msg.started)
        if waiter is None:
            return
        done = msg.outcome
        outcome = done.get("outcome", "unknown")
        is_error = bool(done.get("is_error")) or outcome != "ok"
        result = {"content": done.get("content"), "is_error": is_error}
        terminal = "tool_call_ended" if outcome == "ok" else "tool_call_failed"
        batch: list[dict[str, Any]] = [{"kind": terminal, "started": msg.started,
                                        "result": result, "outcome": outcome}]
        refused = []
        for event in done.get("events") or []:
            try:
                size = check_event(event.get("kind"), event.get("data"), self.turn.emitted_bytes,
                                   self.settings.max_emitted_bytes)
            except EventRefused as exc:
                self._note_refusal(exc)
                refused.append({"kind": event.get("kind"), "code": exc.code,
                                "message": exc.message})
                continue
            self.turn.emitted_bytes += size
            batch.append(extension_record(event["kind"], event.get("data"), "tool",
                                          msg.started))
        self._commit(batch)  # the outcome and the Tool's Events, in one durable batch
        answer = {**result, "outcome": outcome}
        if refused:
            answer["events_refused"] = refused
        waiter.settle(msg.started, answer)

    def _take_waiter(self, started: int) -> Any:
        turn = self.turn
        waiter = turn.pending_effects.pop(started, None) if turn else None
        if turn is not None:
            turn.pending_kinds.pop(started, None)
        if waiter is None:
            log.warning("session %s: outcome for an effect no longer awaited: %s",
                        self.session_id, started)
        return waiter

    def receiveMsg_WakeupMessage(self, msg: WakeupMessage, sender: Any) -> None:
        payload = msg.payload
        if isinstance(payload, IdleTimeout) and payload.generation == self.idle_generation:
            self.release_wanted = True
            self._release_if_idle()
        elif isinstance(payload, TurnDeadline) and self._is_current(payload.turn):
            self._stop_turn("timeout")
        elif isinstance(payload, CancelGrace) and self._is_current(payload.turn):
            for started in list(self.turn.pending_effects):
                self._fail_pending(started, "unknown",
                                   "the executor did not confirm cancellation in time")

    def _is_current(self, turn: int) -> bool:
        return self.turn is not None and self.turn.sequence == turn

    def receiveMsg_ActorExitRequest(self, msg: ActorExitRequest, sender: Any) -> None:
        # The bridge stays open until the process exits: Thespian still watches it (bridge.py).
        self._close_journal()
        self.live.close()

    # --- journal ----------------------------------------------------------------------------

    @property
    def session_dir(self) -> Path:
        assert self.session_id is not None
        return self.settings.sessions_path / self.session_id

    def _open(self, *, create: bool) -> None:
        if self.writer is not None:
            if self.turn is None and self.phase is None:
                # Kept open since an earlier command (an idle TTL): before this one writes,
                # the CRC pass an open makes, so a journal damaged meanwhile takes no write.
                self.writer.verify()
            return
        journal_dir = self.session_dir / "journal"
        if not create and not journal_dir.is_dir():
            raise errors.NotFound("no such session")
        self.writer = JournalWriter.open(journal_dir, segment_bytes=self.settings.segment_bytes)
        self.projection = SessionReader(self.session_dir).projection()
        self._record_interrupted_work()

    def _close_journal(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def _commit(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Append one batch (one write, one fdatasync) and fold it into the projection."""
        assert self.writer is not None
        began = time.perf_counter()
        committed = self.writer.append(records)
        self.metrics.observe("brain_journal_commit_seconds", time.perf_counter() - began)
        for record in committed:
            self.projection = fold(self.projection, record)
            _count(self.metrics, record)
        self.live.committed(self.session_id, committed[-1]["seq"])  # after the fsync
        return committed

    def _checkpoint(self) -> None:
        try:
            self.writer.write_checkpoint(self.projection)
        except Exception:
            log.exception("session %s: checkpoint not written (the journal stays canonical)",
                          self.session_id)

    def _record_interrupted_work(self) -> None:
        """Restart rule: fail what a crash interrupted, never rerun it."""
        records = interrupted_work(self.projection)
        if records:
            self._commit(records)
            self._checkpoint()

    # --- commands ---------------------------------------------------------------------------

    def _create(self, msg: Delivered) -> None:
        command: CreateSession = msg.command
        if (self.session_dir / "journal").exists():
            raise errors.InvalidRequest("session already exists")
        self._open(create=True)
        transcript = command.transcript
        batch: list[dict[str, Any]] = [
            {"kind": "session_created", "config": command.config, "seeded": len(transcript)}
        ]
        if transcript:
            batch.append({"kind": "transcript_changed", "start": 0, "items": transcript,
                          "length": len(transcript)})
        self._commit(batch)
        if not self._begin_environment_phase("setup", msg):
            self._finish_create(msg, [])

    def _finish_create(self, msg: Delivered, failures: list[str]) -> None:
        if failures:
            self._commit([{"kind": "session_failed",
                           "error": {"code": "creation", "message": "; ".join(failures)}}])
        self._checkpoint()
        self._reply(msg.reply_to, msg.request_id, body=self._view())
        self._schedule_release()
        self._answer_waiting_ends()  # an end that arrived during setup runs now

    # --- Environment phases -----------------------------------------------------------------

    def _begin_environment_phase(self, op: str, msg: Delivered,
                                 only: set[str] | None = None) -> bool:
        """Journal `op` for every Environment (or those named in `only`), then send them;
        False when there are none."""
        environments = [env for env in self.projection.config.get("environments", [])
                        if only is None or env["name"] in only]
        if not environments:
            return False
        started = self._commit([{"kind": "environment_op_started", "environment": env["name"],
                                 "op": op, "request": {}} for env in environments])
        self.phase = EnvironmentPhase(op, msg, {record["seq"] for record in started})
        executor = self.services[ENVIRONMENT_EXECUTOR_GLOBAL_NAME]
        for record, environment in zip(started, environments, strict=True):
            self.send(executor, RunEnvironmentOp(self.session_id, record["seq"], environment, op,
                                                 {}, self.myAddress))
        return True

    def receiveMsg_EnvironmentOpDone(self, msg: EnvironmentOpDone, sender: Any) -> None:
        phase = self.phase
        if phase is None or msg.started not in phase.waiting:
            log.warning("session %s: environment outcome no longer awaited: %s",
                        self.session_id, msg.started)
            return
        phase.waiting.discard(msg.started)
        if msg.error is None:
            self._commit([{"kind": "environment_op_ended", "started": msg.started,
                           "result": msg.result or {}, "outcome": "ok"}])
        else:
            self._commit([{"kind": "environment_op_failed", "started": msg.started,
                           "error": {"message": msg.error.get("message", "")},
                           "outcome": msg.error.get("outcome", "unknown")}])
            phase.failures.append(f"{phase.op} failed: {msg.error.get('message', '')}")
        if not phase.waiting:
            self.phase = None
            finish = {"setup": self._finish_create, "detach": self._finish_end,
                      "teardown": self._finish_delete}[phase.op]
            try:
                finish(phase.msg, phase.failures)
            except errors.BrainError as exc:
                self._reply(phase.msg.reply_to, phase.msg.request_id, error=exc)
        self._release_if_idle()

    def _start_turn(self, msg: Delivered) -> None:
        from brain.agentloop import ActivationStopper  # wasmtime stays out of web workers

        command: StartTurn = msg.command
        self._open(create=False)
        self._require_accepting()
        if self.turn is not None or self.projection.status != "idle":
            raise errors.SessionBusy("another turn is active")
        turn_seq = self.writer.last_seq + 1
        agentloop = self.projection.config["agentloop"]
        self._commit([
            {"kind": "turn_started", "input": command.input, "mode": command.mode},
            {"kind": "activation_started", "agentloop": agentloop["name"], "turn": turn_seq},
        ])
        max_secs = self.settings.max_turn_secs
        deadline = time.monotonic() + max_secs if max_secs else None
        stopper = ActivationStopper()
        self.turn = ActiveTurn(sequence=turn_seq, activation=turn_seq + 1, mode=command.mode,
                               reply_to=msg.reply_to if command.mode == "send" else None,
                               request_id=msg.request_id, stopper=stopper)
        self.release_wanted = False
        if max_secs:
            self.wakeupAfter(float(max_secs), TurnDeadline(turn_seq))
        if command.mode == "submit":
            self._reply(msg.reply_to, msg.request_id,
                        body={"session_id": self.session_id, "sequence": turn_seq})
        payload = {
            "kind": "turn",
            "session_id": self.session_id,
            "turn": turn_seq,
            "input": command.input,
            "limits": {
                "max_model_calls": self.settings.max_model_calls,
                "max_turn_secs": self.settings.max_turn_secs,
                "max_tool_secs": self.settings.max_tool_secs,
                "max_emitted_bytes": self.settings.max_emitted_bytes,
            },
        }
        runtime = agentloop_runtime(self.settings)
        start_activation(
            self.bridge,
            lambda host_call: activate_recorded(runtime, agentloop, payload, host_call, deadline,
                                                stopper),
            turn_seq,
        )

    def _cancel_turn(self, msg: Delivered) -> None:
        self._open(create=False)
        turn = self.turn
        if turn is None:
            self._reply(msg.reply_to, msg.request_id,
                        body={"session_id": self.session_id, "sequence": None})
            return
        [record] = self._commit([{"kind": "cancel_requested", "turn": turn.sequence}])
        self._stop_turn("cancelled")
        self._reply(msg.reply_to, msg.request_id,
                    body={"session_id": self.session_id, "sequence": record["seq"]})

    def _end(self, msg: Delivered) -> None:
        self._open(create=False)
        status = self.projection.status
        if status in ("ended", "failed"):
            self._reply(msg.reply_to, msg.request_id, body=self._view())
            return
        if self.turn is not None or self.phase is not None:
            self.waiting_ends.append(msg)  # answered when the active work has finished
            return
        self._commit([{"kind": "session_ending"}])  # before detach: no message gets in now
        if not self._begin_environment_phase("detach", msg):
            self._finish_end(msg, [])

    def _finish_end(self, msg: Delivered, failures: list[str]) -> None:
        # A failed detach is recorded and does not prevent the session from ending.
        self._commit([{"kind": "session_ended"}])
        self._checkpoint()
        self._reply(msg.reply_to, msg.request_id, body=self._view())
        self._schedule_release()
        self._answer_waiting_ends()

    def _answer_waiting_ends(self) -> None:
        waiting, self.waiting_ends = self.waiting_ends, []
        for end in waiting:
            try:
                self._end(end)
            except errors.BrainError as exc:
                self._reply(end.reply_to, end.request_id, error=exc)

    def _delete(self, msg: Delivered) -> None:
        try:
            self._open(create=False)
        except CorruptJournal as exc:
            # A damaged journal cannot record teardown, and an effect that cannot be journaled
            # first is never sent: no Environment operation runs. The session's directory and
            # its local Environment trees are removed as they are; host Environments are not
            # told (docs/decisions.md).
            log.warning("session %s damaged (%s): deleted without Environment teardown",
                        self.session_id, exc)
            self._remove_session_files()
            self._reply(msg.reply_to, msg.request_id, body={})
            return
        if self.projection.status not in ("ended", "failed"):
            raise errors.SessionActive("end the session before deleting it")
        if self.phase is not None:
            raise errors.SessionBusy("an Environment operation is in flight")
        set_up = environments_set_up(self.session_dir / "journal")
        if not self._begin_environment_phase("teardown", msg, only=set_up):
            self._finish_delete(msg, [])

    def _finish_delete(self, msg: Delivered, failures: list[str]) -> None:
        if failures:
            # The session and its Environment record remain; no automatic retry.
            self._checkpoint()
            raise errors.TeardownFailed("Environment teardown failed ("
                                        + "; ".join(failures)
                                        + "); retry with a new Idempotency-Key")
        self._remove_session_files()
        self._reply(msg.reply_to, msg.request_id, body={})

    def _remove_session_files(self) -> None:
        self._close_journal()
        self.projection = None
        shutil.rmtree(self.session_dir, ignore_errors=True)
        environments = self.settings.environments_path / self.session_id
        shutil.rmtree(environments, ignore_errors=True)

    def _recover_only(self, msg: Delivered) -> None:
        self._open(create=False)  # the idle rule follows in receiveMsg_Delivered
        self._reply(msg.reply_to, msg.request_id, body=self._view())

    def _require_accepting(self) -> None:
        status = self.projection.status
        if status in ("ending", "ended"):
            raise errors.SessionEnded("the session has ended")
        if status == "failed":
            raise errors.SessionEnded("the session has failed")

    # --- the Agentloop's host services -----------------------------------------------------

    def _host_call(self, call: PendingHostCall) -> None:
        op = call.op.get("op")
        handler = {
            "transcript.read": self._op_transcript_read,
            "transcript.set": self._op_transcript_set,
            "kv.read": self._op_kv_read,
            "kv.put": self._op_kv_put,
            "kv.delete": self._op_kv_delete,
            "model.call": self._op_model_call,
            "tools.call": self._op_tools_call,
            "events.emit": self._op_events_emit,
            "telemetry.record": self._op_telemetry_record,
        }.get(op)
        if self.turn is None:
            call.respond(_host_error("internal", "no active turn"))
            return
        if handler is None:
            call.respond(_host_error("invalid_request", f"unknown op {op!r}"))
            return
        stopping = self.turn.stopping_error()
        if stopping is not None and op in EFFECT_OPS:
            call.respond(_host_error(stopping["code"], stopping["message"]))
            return
        try:
            result = handler(call)
        except errors.BrainError as exc:
            result = _host_error(exc.code, exc.message)
        if result is not None:
            call.respond(result)

    def _op_transcript_read(self, call: PendingHostCall) -> dict[str, Any]:
        return {"messages": self.projection.transcript,
                "through_sequence": self.projection.last_seq}

    def _op_transcript_set(self, call: PendingHostCall) -> dict[str, Any]:
        messages = _messages_arg(call.op)
        delta = transcript_delta(self.projection.transcript, messages)
        if delta is None:
            return {"sequence": None}
        [record] = self._commit([{"kind": "transcript_changed", **delta}])
        return {"sequence": record["seq"]}

    def _op_kv_read(self, call: PendingHostCall) -> dict[str, Any]:
        key = _key_arg(call.op)
        if key in self.projection.kv:
            return {"found": True, "value": self.projection.kv[key]}
        return {"found": False, "value": None}

    def _op_kv_put(self, call: PendingHostCall) -> dict[str, Any]:
        key = _key_arg(call.op)
        if "value" not in call.op:
            raise errors.InvalidRequest("kv.put needs a value")
        [record] = self._commit([{"kind": "kv_put", "key": key, "value": call.op["value"]}])
        return {"sequence": record["seq"]}

    def _op_kv_delete(self, call: PendingHostCall) -> dict[str, Any]:
        key = _key_arg(call.op)
        if key not in self.projection.kv:
            return {"sequence": None}
        [record] = self._commit([{"kind": "kv_delete", "key": key}])
        return {"sequence": record["seq"]}

    def _op_telemetry_record(self, call: PendingHostCall) -> dict[str, Any]:
        name = call.op.get("name")
        if not isinstance(name, str) or not name:
            raise errors.InvalidRequest("telemetry.record needs a name")
        sink = self.settings.telemetry_sink
        if sink is not None:
            line = {"session_id": self.session_id, "turn": self.turn.sequence, "name": name,
                    "value": call.op.get("value"), "attributes": call.op.get("attributes"),
                    "at": time.time()}
            with open(sink, "a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")
        return {}

    def _op_model_call(self, call: PendingHostCall) -> None:
        turn = self.turn
        limit = self.settings.max_model_calls
        if limit and turn.model_calls >= limit:
            turn.forced_error = {"code": "model_call_limit",
                                 "message": f"more than {limit} model calls in one turn"}
            raise errors.BrainError(turn.forced_error["message"], code="model_call_limit")
        messages = _messages_arg(call.op)
        tools = self._offered_tools(call.op.get("tools"))
        options = call.op.get("options") or {}
        if not isinstance(options, dict):
            raise errors.InvalidRequest("options must be an object")
        model = self.projection.config["model"]
        turn.model_calls += 1
        [started] = self._commit([{
            "kind": "model_call_started",
            "model": model["name"],
            "message_count": len(messages),
            "context": {"through_sequence": self.projection.last_seq,
                        "delta": context_delta(self.projection.transcript, messages)},
            "tools": [tool["name"] for tool in tools],
            "options": options,
        }])
        turn.pending_effects[started["seq"]] = SingleWaiter(call)
        turn.pending_kinds[started["seq"]] = "model_call"
        request = {"messages": messages, "tools": tools, "options": options}
        self.send(self._executor("model_call"),
                  RunModelCall(self.session_id, started["seq"], model, request, self.myAddress))
        return None

    def _op_tools_call(self, call: PendingHostCall) -> None:
        calls = call.op.get("calls")
        if not isinstance(calls, list) or not calls:
            raise errors.InvalidRequest("calls must be a non-empty list")
        configured = {tool["name"]: tool for tool in self.projection.config.get("tools", [])}
        invocations = []
        for index, item in enumerate(calls):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise errors.InvalidRequest(f"calls[{index}]: needs a name")
            if item["name"] not in configured:
                raise errors.InvalidRequest(
                    f"calls[{index}]: tool {item['name']!r} is not configured for this session")
            call_id = item.get("id")
            invocations.append((configured[item["name"]],
                                {"id": call_id if isinstance(call_id, str) else "",
                                 "input": item.get("input", {})}))
        max_secs = self.settings.max_tool_secs
        deadline = time.time() + max_secs if max_secs else None
        # Every call its own record, all durable in one batch before any is sent.
        started_records = self._commit([
            {"kind": "tool_call_started", "tool": tool["name"], "invocation": invocation,
             "deadline": deadline}
            for tool, invocation in invocations
        ])
        order = [record["seq"] for record in started_records]
        waiter = ToolBatchWaiter(call, order)
        environments = self.projection.config.get("environments", [])
        for record, (tool, invocation) in zip(started_records, invocations, strict=True):
            self.turn.pending_effects[record["seq"]] = waiter
            self.turn.pending_kinds[record["seq"]] = "tool_call"
            self.send(self._executor("tool_call"),
                      RunToolCall(self.session_id, record["seq"], tool, invocation, deadline,
                                  environments, self.myAddress))
        return None

    def _op_events_emit(self, call: PendingHostCall) -> dict[str, Any]:
        kind, data = call.op.get("kind"), call.op.get("data")
        try:
            size = check_event(kind, data, self.turn.emitted_bytes,
                               self.settings.max_emitted_bytes)
        except EventRefused as exc:
            self._note_refusal(exc)
            return _host_error(exc.code, exc.message)
        self.turn.emitted_bytes += size
        [record] = self._commit([extension_record(kind, data, "agentloop",
                                                  self.turn.activation)])
        return {"sequence": record["seq"]}

    def _note_refusal(self, refused: EventRefused) -> None:
        """Over the emit budget is a turn error (contract: `emit_limit`), as the model-call
        limit is: the Event is refused now and the turn fails with it, whatever the loop does."""
        if refused.code == "emit_limit" and self.turn is not None \
                and self.turn.forced_error is None:
            self.turn.forced_error = {"code": "emit_limit", "message": refused.message}

    def _offered_tools(self, requested: Any) -> list[dict[str, Any]]:
        configured = {tool["name"]: tool for tool in self.projection.config.get("tools", [])}
        if requested is None:
            names = list(configured)
        elif isinstance(requested, list) and all(isinstance(n, str) for n in requested):
            names = requested
        else:
            raise errors.InvalidRequest("tools must be a list of configured tool names")
        offered = []
        for name in names:
            tool = configured.get(name)
            if tool is None:
                raise errors.InvalidRequest(f"tool {name!r} is not configured for this session")
            offered.append({"name": name, "description": tool.get("description", ""),
                            "input_schema": tool.get("input_schema", {"type": "object"})})
        return offered

    def _executor(self, kind: str) -> Any:
        """The executor actor for an effect kind (resolved at boot, handed over by the registry)."""
        name = TOOL_EXECUTOR_GLOBAL_NAME if kind == "tool_call" else MODEL_EXECUTOR_GLOBAL_NAME
        return self.services[name]

    def _stop_turn(self, reason: str) -> None:
        """Cancellation, by request or by the wall deadline: forward it, then wait, bounded."""
        turn = self.turn
        if turn is None or turn.stop_reason is not None:
            return
        turn.stop_reason = reason
        if reason == "cancelled" and turn.stopper is not None:
            turn.stopper.stop()  # a guest computing on its own is stopped too, not only effects
        for started, kind in list(turn.pending_kinds.items()):
            self.send(self._executor(kind), CancelEffect(self.session_id, started))
        self.wakeupAfter(CANCEL_GRACE_SECS, CancelGrace(turn.sequence))

    def _fail_pending(self, started: int, outcome: str, message: str) -> None:
        """Record an outstanding effect's outcome ourselves and release the waiting guest."""
        turn = self.turn
        waiter = turn.pending_effects.pop(started)
        kind = turn.pending_kinds.pop(started, "model_call")
        record: dict[str, Any] = {"kind": f"{kind}_failed", "started": started,
                                  "error": {"message": message}, "outcome": outcome}
        if kind == "tool_call":
            record["result"] = {"content": message, "is_error": True}
            guest_answer = {"content": message, "is_error": True, "outcome": outcome}
        else:
            guest_answer = {"error": {"code": "model_call_failed", "outcome": outcome,
                                      "message": message}}
        self._commit([record])
        waiter.settle(started, guest_answer)

    # --- turn completion --------------------------------------------------------------------

    def _finish_turn(self, finished: ActivationFinished) -> None:
        turn = self.turn
        if turn is None or finished.turn != turn.sequence:
            return
        for started in list(turn.pending_effects):
            # The guest stopped while an effect was out: its outcome can no longer be known.
            self._fail_pending(started, "unknown", "the activation ended first")
        records: list[dict[str, Any]] = []
        if finished.error is not None:
            records.append({"kind": "activation_failed", "started": turn.activation,
                            "error": finished.error})
            error = turn.forced_error or finished.error
        else:
            records.append({"kind": "activation_ended", "started": turn.activation})
            error = turn.forced_error or _loop_error(finished.result)
        if error is None:
            output = finished.result.get("output")
            records.append({"kind": "turn_ended", "started": turn.sequence, "output": output})
        else:
            if not turn.forced_error and turn.stop_reason is not None:
                error = turn.stopping_error()
            records.append({"kind": "turn_failed", "started": turn.sequence, "error": error})
        self._commit(records)
        self.turn = None
        if turn.reply_to is not None:
            self._reply(turn.reply_to, turn.request_id,
                        body=turn_result(self.session_id, turn.sequence, records[-1]))
        self._checkpoint()
        self._schedule_release()
        self._answer_waiting_ends()

    # --- replies and release ----------------------------------------------------------------

    def _view(self) -> dict[str, Any]:
        return session_view(self.session_id, self.projection)

    def _reply(self, reply_to: Any, request_id: str, *, body: dict[str, Any] | None = None,
               error: errors.BrainError | None = None) -> None:
        if reply_to is None:
            return
        if error is not None:
            self.send(reply_to, Reply(request_id, error_code=error.code,
                                      error_message=error.message))
        else:
            self.send(reply_to, Reply(request_id, body=body))

    def _schedule_release(self) -> None:
        # Metrics go out now, a registry round trip before any release: a message sent in the
        # same handler as the exit can be lost with the process (Thespian 4.0.1).
        self._flush_metrics()
        ttl_ms = None
        if self.projection is not None:
            ttl_ms = self.projection.config.get("idle_ttl_ms")
        if ttl_ms is None:
            ttl_ms = self.settings.session_idle_ttl_ms
        self.idle_generation += 1
        if ttl_ms is None:
            self.release_wanted = True
        elif ttl_ms > 0:
            self.release_wanted = False
            self.wakeupAfter(ttl_ms / 1000.0, IdleTimeout(self.idle_generation))
        else:
            self.release_wanted = False  # explicit zero: retain indefinitely

    def _flush_metrics(self) -> None:
        if not self.metrics:
            return
        counters, observations = self.metrics.take()
        metrics = self.services.get(METRICS_GLOBAL_NAME)
        if metrics is not None:
            self.send(metrics,
                      MetricsReport(f"session-{self.session_id}", counters, observations, {}))

    def _release_if_idle(self) -> None:
        if (self.release_wanted or self.writer is None) and self.turn is None \
                and self.phase is None and self.registry is not None:
            self.send(self.registry, ReleaseMe(self.session_id, self.handled))


EFFECT_OPS = frozenset({"model.call", "tools.call"})
_EFFECT_TERMINALS = frozenset({"model_call_ended", "model_call_failed", "tool_call_ended",
                               "tool_call_failed", "environment_op_ended",
                               "environment_op_failed"})


def _count(metrics: MetricBatch, record: dict[str, Any]) -> None:
    kind = record["kind"]
    if kind in _EFFECT_TERMINALS:
        metrics.inc("brain_effects_total", kind=kind.rsplit("_", 1)[0],
                    outcome=record.get("outcome", "unknown"))
    elif kind == "turn_ended":
        metrics.inc("brain_turns_total", status="ended", code="")
    elif kind == "turn_failed":
        metrics.inc("brain_turns_total", status="failed",
                    code=(record.get("error") or {}).get("code", ""))


def _host_error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def _loop_error(result: dict[str, Any] | None) -> dict[str, Any] | None:
    if result is None or result.get("status") == "completed":
        return None
    error = result.get("error") if isinstance(result.get("error"), dict) else {}
    return {"code": str(error.get("code", "agentloop_error")),
            "message": str(error.get("message", "the Agentloop reported failure"))}


def _messages_arg(op: dict[str, Any]) -> list[dict[str, Any]]:
    messages = op.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise errors.InvalidRequest("messages must be a list of message objects")
    return messages


def _key_arg(op: dict[str, Any]) -> str:
    key = op.get("key")
    if not isinstance(key, str) or not key:
        raise errors.InvalidRequest("key must be a non-empty string")
    return key
