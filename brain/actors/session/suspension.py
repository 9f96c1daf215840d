"""The session actor's side of suspended turns: let the guest go, and bring it back by replay.

The core decides (brain/sessions/suspension.py); this carries it out:
- `SuspendActivation`: the guest's waiting call is answered `SUSPENDED`, which unwinds it; its
  activation is void from then on (its end is dropped), and the step's `ReleaseMe(suspended)`
  lets the session go with the turn, reported to the registry at once.
- The open turn's history (the projection before its `turn_started`, and every record from
  that one on: what a replay answers from) is kept from the commit that starts the turn until
  the one that ends it, through its suspensions and resumptions. An open with a suspended turn
  (the registry's `Delivered.suspended`, or the copy kept here for commands that crossed the
  release) takes it from what this actor kept at the release (kept_journal.py), or reads it.
- `ResumeActivation`: a fresh activation whose guest calls the `Replay` answers first.

The actor (brain/actors/session/actor.py) holds it as `actor.suspension`.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from brain.actors.session.activation import SUSPENDED
from brain.actors.session.deadline import monotonic_deadline
from brain.journal import read_timeline
from brain.journal.projection import fold_all
from brain.protocol.effects import Parked
from brain.protocol.messages import Delivered, ReleaseMe
from brain.protocol.records import TURN_ENDS, TURN_STARTED
from brain.sessions.asked_limits import effective_limits
from brain.sessions.replay import Replay, activation_history
from brain.sessions.state import ResumeActivation, Turn
from brain.sessions.turns import activation_payload

log = logging.getLogger(__name__)


class Suspension:
    """Suspended turns, on the actor's side: the guest let go, the turn's history kept from an
    open, and the guest brought back by replay.

    Its own state is what outlives one open of the session: the suspended turn the last
    release let go (for a command that crossed that release) and the suspended turn's history
    (what a resumption replays from). Of the actor's state it reads `core`, `session_dir` and
    `otel_spans`; it takes the history an open found from the actor's `writer`, notes its
    records in the actor's `latencies`, answers and empties the actor's `guest_calls`, and
    voids the running activation (`stopper`, `activation`, `_void_activations`). A resumption
    starts through the actor's `start_agentloop`; a `Parked` is stepped through its `_step`.
    """

    def __init__(self, actor: Any) -> None:
        self._actor = actor
        self._kept_suspension: tuple[str, Turn] | None = None  # what the last release took
        # the suspended turn's activation: the projection before it and every record from it on
        self._timeline: tuple[Any, list[dict[str, Any]]] | None = None

    @property
    def timeline(self) -> tuple[Any, list[dict[str, Any]]] | None:
        """The open turn's history, kept with a suspended release (kept_journal.py)."""
        return self._timeline

    def parked(self, msg: Parked) -> None:
        """An executor parked an effect of the session served now: the core decides whether
        the turn is suspended. One of a session served before is dropped."""
        actor = self._actor
        if actor.core is not None and msg.session_id == actor.core.session_id:
            actor._step(msg)

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

    def open_history(self, suspended: Turn | None,
                     kept: tuple[Any, list[dict[str, Any]]] | None = None) -> None:
        """After an open: the suspended turn's history, if there is one: `kept` at this actor's
        release of the turn, else what the open read."""
        actor = self._actor
        self._timeline = None
        if suspended is None or actor.writer is None:
            spans = actor.otel_spans
            if spans is not None and actor.core is not None:
                spans.no_suspended_turn(actor.core.session_id)
            return
        history, actor.writer.history = kept or actor.writer.history, None  # the writer keeps none
        if history is None:  # the checkpoint is newer than the turn: read it from the start
            history = read_timeline(actor.session_dir / "journal", suspended.sequence)
        spans = actor.otel_spans
        if spans is not None:
            spans.resume(actor.core.session_id, suspended.sequence)
        actor.latencies.note(history[1])
        self._timeline = history  # its records list takes each later commit (note_committed)

    def note_committed(self, committed: list[dict[str, Any]]) -> None:
        """A batch just committed, before the actor's core takes the state that folds it: the
        open turn's history takes it. A batch that ends the turn ends the history; one that
        starts a turn starts one, from the core's projection (the one just before the batch)."""
        start = end = -1
        for index, record in enumerate(committed):
            if record["kind"] == TURN_STARTED:
                start = index
            elif record["kind"] in TURN_ENDS:
                end = index
        if start > end:
            before = self._actor.core.projection
            if before is None:  # the session's first batch: its next open reads the history
                self._timeline = None
                return
            if start:
                before = fold_all(before, committed[:start])
            self._timeline = (before, list(committed[start:]))
        elif end >= 0:
            self._timeline = None
        elif self._timeline is not None:
            self._timeline[1].extend(committed)

    def forget_history(self) -> None:
        """The session is released: its suspended turn's history goes with it (the turn's next
        open reads it again)."""
        self._timeline = None

    def suspend_activation(self) -> None:
        """Unwind the guest: its waiting call is answered SUSPENDED, and nothing of this
        activation (its late calls, its end) reaches the core again."""
        actor = self._actor
        for call_id in list(actor.guest_calls):
            actor.guest_calls.pop(call_id).respond(SUSPENDED)
        if actor.stopper is not None:
            actor._void_activations.add(actor.activation)
            actor.stopper = None
        turn = actor.core.turn
        spans = actor.otel_spans
        if spans is not None:
            spans.suspend(actor.core.session_id, turn.sequence)
        actor.trace_mark(actor.core.session_id,
                         f"turn {turn.sequence} suspended (its instance dropped)")

    def suspended_release(self, release: ReleaseMe, report: Any) -> Any:
        """The Released for a suspension: said at once, with the turn the registry keeps."""
        self._kept_suspension = (release.session_id, release.suspended)
        return replace(report, suspended=release.suspended)

    def resume_activation(self, resume: ResumeActivation) -> None:
        """Start a fresh activation of the suspended turn, whose guest calls the kept history
        answers first (brain/sessions/replay.py)."""
        actor = self._actor
        timeline = self._timeline
        if timeline is None:
            raise RuntimeError("a resumption without the activation's history")
        history = activation_history(timeline[0], timeline[1], resume.turn, resume.activation)
        core = actor.core
        # the turn's own limits (brain/sessions/asked_limits.py), as its first activation had
        limits = effective_limits(core.limits, history.base.config, history.turn_limits)
        replay = Replay(core.session_id, limits, history, resume.turn, resume.activation)
        payload = activation_payload(core.session_id, resume.turn, history.turn_input, limits)
        deadline = monotonic_deadline(core.turn.deadline_ms if core.turn is not None else None)
        actor.trace_mark(core.session_id,
                         f"turn {resume.turn} resumed: a fresh instance replays "
                         f"{len(history.records)} records")
        spans = actor.otel_spans
        if spans is not None:
            spans.resumed_activation(core.session_id, resume.turn, resume.activation)
        actor.start_agentloop(resume.turn, resume.agentloop, payload, deadline, replay)
