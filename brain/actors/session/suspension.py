"""The session actor's side of suspended turns: let the guest go, and bring it back by replay.

The core decides (brain/sessions/suspension.py); this carries it out:
- `SuspendActivation`: the guest's waiting call is answered `SUSPENDED`, which unwinds it; its
  activation is void from then on (its end is dropped), and the step's `ReleaseMe(suspended)`
  lets the session go with the turn, reported to the registry at once.
- An open with a suspended turn (the registry's `Delivered.suspended`, or the copy kept here
  for commands that crossed the release) also reads what the turn's activation journaled,
  and keeps every record committed after it: the history the replay answers from.
- `ResumeActivation`: a fresh activation whose guest calls the `Replay` answers first.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from brain.actors.session.activation import SUSPENDED, PendingGuestCall
from brain.actors.session.deadline import monotonic_deadline
from brain.journal import read_timeline
from brain.protocol.effects import Parked
from brain.protocol.messages import Delivered, ReleaseMe
from brain.sessions.replay import Replay, activation_history
from brain.sessions.state import ResumeActivation, Turn
from brain.sessions.turns import activation_payload

log = logging.getLogger(__name__)


class SuspendingSession:
    """Mixed into SessionActor, whose core, writer, guest calls and activations it uses."""

    core: Any
    writer: Any
    guest_calls: dict[int, PendingGuestCall]
    stopper: Any
    activation: int
    _void_activations: set[int]
    session_dir: Path

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kept_suspension: tuple[str, Turn] | None = None  # what the last release took
        self._timeline: tuple[Any, list[dict[str, Any]]] | None = None

    def receiveMsg_Parked(self, msg: Parked, sender: Any) -> None:
        if self.core is not None and msg.session_id == self.core.session_id:
            self._step(msg)  # type: ignore[attr-defined]

    def suspension_for(self, msg: Delivered) -> Turn | None:
        """The suspended turn an open for `msg` carries on: the registry's, with the first
        command it forwards here; for a command that crossed this actor's release, the one
        this actor let go (the registry drops the one in that release)."""
        kept, self._kept_suspension = self._kept_suspension, None
        if msg.first:
            return msg.suspended
        if kept is not None and kept[0] == msg.session_id:
            return kept[1]
        return None

    def open_history(self, suspended: Turn | None) -> None:
        """After an open: what the suspended turn's activation journaled, if there is one."""
        self._timeline = None
        if suspended is None or self.writer is None:
            spans = self.otel_spans  # type: ignore[attr-defined]
            if spans is not None and self.core is not None:
                spans.no_suspended_turn(self.core.session_id)
            return
        history, self.writer.history = self.writer.history, None  # the writer keeps none
        if history is None:  # the checkpoint is newer than the turn: read it from the start
            history = read_timeline(self.session_dir / "journal", suspended.sequence)
        spans = self.otel_spans  # type: ignore[attr-defined]
        if spans is not None:
            spans.resume(self.core.session_id, suspended.sequence)
        self.latencies.note(history[1])  # type: ignore[attr-defined]
        self._timeline = history  # its records list takes each later commit (note_committed)

    def note_committed(self, committed: list[dict[str, Any]]) -> None:
        if self._timeline is not None:
            self._timeline[1].extend(committed)

    def forget_history(self) -> None:
        self._timeline = None

    def suspend_activation(self) -> None:
        """Unwind the guest: its waiting call is answered SUSPENDED, and nothing of this
        activation (its late calls, its end) reaches the core again."""
        for call_id in list(self.guest_calls):
            self.guest_calls.pop(call_id).respond(SUSPENDED)
        if self.stopper is not None:
            self._void_activations.add(self.activation)
            self.stopper = None
        turn = self.core.turn
        spans = self.otel_spans  # type: ignore[attr-defined]
        if spans is not None:
            spans.suspend(self.core.session_id, turn.sequence)
        self.trace_mark(self.core.session_id,  # type: ignore[attr-defined]
                        f"turn {turn.sequence} suspended (its instance dropped)")

    def suspended_release(self, release: ReleaseMe, report: Any) -> Any:
        """The Released for a suspension: said at once, with the turn the registry keeps."""
        self._kept_suspension = (release.session_id, release.suspended)
        return replace(report, suspended=release.suspended)

    def resume_activation(self, resume: ResumeActivation) -> None:
        timeline = self._timeline
        if timeline is None:
            raise RuntimeError("a resumption without the activation's history")
        history = activation_history(timeline[0], timeline[1], resume.turn, resume.activation)
        self._timeline = None
        core = self.core
        replay = Replay(core.session_id, core.limits, history, resume.turn, resume.activation)
        payload = activation_payload(core.session_id, resume.turn, history.turn_input,
                                     core.limits)
        deadline = monotonic_deadline(core.turn.deadline_ms if core.turn is not None else None)
        self.trace_mark(core.session_id,  # type: ignore[attr-defined]
                        f"turn {resume.turn} resumed: a fresh instance replays "
                        f"{len(history.records)} records")
        spans = self.otel_spans  # type: ignore[attr-defined]
        if spans is not None:
            spans.resumed_activation(core.session_id, resume.turn, resume.activation)
        self.start_agentloop(resume.turn, resume.agentloop, payload, deadline,  # type: ignore
                             replay)
