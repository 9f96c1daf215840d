"""Run an Agentloop against a past turn's journal: the replay proper.

The new module gets a fresh instance and the payload the turn's activation got, under a live
activation's limits (the memory limit, and the turn deadline: a guest that does not stop is
cut off as a live one is). Each guest call is answered by the session core's `Replay` from
the activation's journaled records, exactly as when a suspended turn resumes; the first call
whose records differ stops the guest there. If every call agrees, the new loop's return is
compared with how the turn ended. Nothing is sent, nothing is committed, and no file of the
session is opened for writing.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from brain.actors.session.activation import wasm_cache_dir
from brain.agentloop import AgentloopError, AgentloopRuntime
from brain.agentloop.precompile import precompile_in_child
from brain.replayer.refusal import INVALID, NOT_FOUND, ReplayRefused
from brain.replayer.report import (
    ANSWERED,
    DIVERGED,
    MATCH,
    RETURN_OP,
    ReplayReport,
    ReplayStep,
    result_text,
)
from brain.replayer.turn_history import TurnOnRecord, load_turn
from brain.session_limits import limits_from
from brain.sessions.asked_limits import effective_limits
from brain.sessions.replay import Diverged, Replay
from brain.sessions.state import Limits
from brain.sessions.turns import activation_payload
from brain.settings import Settings


def replay_turn(settings: Settings, session_id: str, turn: int | None = None,
                agentloop: Path | None = None) -> ReplayReport:
    """Replay `turn` (default: the session's last finished one) with `agentloop` (default:
    the session's own). Raises ReplayRefused when it cannot run at all."""
    if not session_id or Path(session_id).name != session_id or session_id.startswith("."):
        raise ReplayRefused(NOT_FOUND, f"no session {session_id!r}")
    on_record = load_turn(settings.sessions_path / session_id, session_id, turn)
    path = Path(agentloop if agentloop is not None else on_record.agentloop.get("path", ""))
    cache_dir = wasm_cache_dir(settings)
    runtime = AgentloopRuntime(memory_limit_bytes=settings.agentloop_memory_mb << 20,
                               cache_dir=cache_dir)
    try:
        # A component not in the machine's cache is compiled there first, on every CPU and
        # announced on stderr (brain/agentloop/precompile.py); this process only maps it.
        precompile_in_child([str(path)], cache_dir)
        sha256 = runtime.prepare(path)
    except (AgentloopError, OSError) as exc:
        raise ReplayRefused(INVALID, f"Agentloop {path} cannot be run: "
                                     f"{getattr(exc, 'message', exc)}") from None
    history = on_record.history
    # the session's and the turn's own limits, as the live turn ran under them
    limits = effective_limits(_limits(settings), history.base.config, history.turn_limits)
    replay = Replay(session_id, limits, history, on_record.turn, on_record.activation,
                    passed_over=on_record.passed_over)
    walk = _Walk(replay, history.records, on_record.stopped)
    payload = activation_payload(session_id, on_record.turn, history.turn_input, limits)
    deadline = time.monotonic() + limits.max_turn_secs if limits.max_turn_secs else None
    try:
        returned: dict[str, Any] | None = runtime.activate(path, payload, walk.guest_call,
                                                           deadline)
    except AgentloopError as exc:
        returned = {"status": "failed", "error": {"code": exc.code, "message": exc.message}}
    if walk.fault is not None:
        raise walk.fault
    if walk.diverged:
        returned = None
    else:
        walk.steps.append(_return_step(replay, on_record, returned))
    recorded = on_record.agentloop
    return ReplayReport(
        session_id=session_id, turn=on_record.turn, activation=on_record.activation,
        agentloop={"path": str(path), "sha256": sha256},
        recorded_agentloop={"name": recorded.get("name"), "sha256": recorded.get("sha256")},
        steps=tuple(walk.steps), journaled_result=on_record.journaled_result(),
        returned=returned, journaled_records=len(history.records),
        matched_records=replay.position)


def _limits(settings: Settings) -> Limits:
    """The deployment's bounds, as a session actor of this data dir's server applies them; no
    webhook is owed, since a replay commits nothing."""
    return replace(limits_from(settings), webhooks=False)


class _Walk:
    """The guest's calls, answered by the replay and noted as steps until one diverges."""

    def __init__(self, replay: Replay, records: tuple[dict[str, Any], ...],
                 stopped: str | None) -> None:
        self.replay = replay
        self.records = records
        self.stopped = stopped  # the turn was stopped (cancel, deadline) after these records
        self.steps: list[ReplayStep] = []
        self.diverged = False
        self.fault: Exception | None = None

    def guest_call(self, op: dict[str, Any]) -> dict[str, Any]:
        if self.stopped is not None and self.replay.done:
            # The live activation was stopped here: nothing after it can be compared.
            raise AgentloopError(self.stopped, "the turn was stopped at this point the first "
                                               "time (see `journaled_result`)")
        call = self.replay.calls + 1
        name = str(op.get("op"))
        before = self.replay.position
        try:
            answer = self.replay.answer(op)
        except Diverged as exc:
            self.diverged = True
            self.steps.append(ReplayStep(call, name, DIVERGED, message=exc.message,
                                         journaled=exc.journaled, asked=exc.asked))
            raise AgentloopError(exc.code, exc.message) from None
        except Exception as exc:  # a fault of Brain's: report it, never answer differently
            self.fault = exc
            raise AgentloopError("internal", "the replay of a guest call failed") from None
        passed = tuple(r["seq"] for r in self.records[before:self.replay.position])
        self.steps.append(ReplayStep(call, name, MATCH if passed else ANSWERED, passed, answer))
        return answer


def _return_step(replay: Replay, on_record: TurnOnRecord,
                 returned: dict[str, Any]) -> ReplayStep:
    """The guest stopped with every call agreeing: did it stop where, and as, the turn did?
    (A turn stopped from outside ended as the stop had it, whatever its loop returned: only
    where the loop got to counts.)"""
    call = replay.calls + 1
    if replay.position < len(on_record.history.records):
        diverged = replay.returned()
        return ReplayStep(call, RETURN_OP, DIVERGED, message=diverged.message,
                          journaled=diverged.journaled, asked=returned)
    journaled = on_record.journaled_result()
    if on_record.stopped is None and not _same_result(returned, journaled):
        return ReplayStep(call, RETURN_OP, DIVERGED,
                          message=f"the Agentloop made every call the journal holds, then "
                                  f"returned {result_text(returned, 'asked')}, but the turn "
                                  f"came to {result_text(journaled, 'journaled')}",
                          journaled=journaled, asked=returned)
    return ReplayStep(call, RETURN_OP, MATCH, answer=returned)


def _same_result(returned: dict[str, Any], journaled: dict[str, Any]) -> bool:
    """The same output; for a failure, the same error code (a message may name a time)."""
    if returned.get("status") != journaled.get("status"):
        return False
    if returned.get("status") == "completed":
        return returned.get("output") == journaled.get("output")
    return (returned.get("error") or {}).get("code") == (journaled.get("error") or {}).get("code")

