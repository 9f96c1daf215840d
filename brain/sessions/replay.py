"""Replay: answer a resumed activation's guest calls from what its activation journaled.

A suspended turn's guest resumes in a fresh Wasm instance (suspension.py). The instance starts
`brain_activate` from the beginning with the same payload, and asks the same guest calls again;
each is answered here, without sending or committing anything, until the guest has been given
the answer it was waiting for when it was suspended. From then on it is a live activation.

The journal is the history, and the session core decides each replayed call exactly as it did
live: the call is stepped on a core state whose projection is the journal as it stood at that
point, and the records the step would commit are checked against the records the activation
committed the first time. A call that would record something else (another op, other
messages, another key) has diverged: the guest is not deterministic, or another module runs.
`Diverged` names the first differing call, and the turn fails with `agentloop_diverged`;
nothing is sent twice, since nothing is sent here at all. An effect's outcome is taken from
its journaled terminal record, which is all the live guest was told (turns.py, `guest_answer`).

Reads (`transcript.read`, `kv.read`) are answered from the journal at that point, and calls
that recorded nothing the first time (reads, an unchanged `transcript.set`, a refused op,
`telemetry.record`, which is not written again) leave nothing to check: only what the guest
asked Brain to record or to do is compared. This is the rule a guest relies on
(docs/agentloop.md, "Suspension and replay").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brain.journal import Projection, fold, fold_all
from brain.protocol.records import (
    ACTIVATION_STARTED,
    EXTENSION_EVENT,
    KV_DELETE,
    KV_PUT,
    MODEL_CALL_ENDED,
    MODEL_CALL_FAILED,
    MODEL_CALL_STARTED,
    TOOL_CALL_ENDED,
    TOOL_CALL_FAILED,
    TOOL_CALL_STARTED,
    TRANSCRIPT_CHANGED,
    TURN_STARTED,
)
from brain.sessions import core
from brain.sessions.carry_out import Mode, carry_out
from brain.sessions.state import (
    GuestCall,
    Limits,
    Phase,
    RecordedOutcome,
    SessionState,
    Turn,
)
from brain.sessions.tx import evolve

DIVERGED = "agentloop_diverged"
_TERMINALS = frozenset({MODEL_CALL_ENDED, MODEL_CALL_FAILED, TOOL_CALL_ENDED,
                        TOOL_CALL_FAILED})
_UNCOMPARED = frozenset({"at", "deadline"})
"""Fields a replayed record may differ in: the time of the step, and a Tool call's deadline,
computed from it."""


class Diverged(Exception):
    """A replayed guest call asks for something other than what its activation journaled."""

    code = DIVERGED

    def __init__(self, message: str, asked: dict[str, Any] | None = None,
                 journaled: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.asked = asked  # the record the guest's call would commit, if it would commit one
        self.journaled = journaled  # the record the journal holds there, if it holds one


@dataclass(frozen=True)
class ActivationHistory:
    """What an activation journaled: the projection through its `activation_started`, every
    record after it in order, and its turn's input (and the lower limits its message asked
    for, if any)."""

    base: Projection
    records: tuple[dict[str, Any], ...]
    turn_input: Any
    turn_limits: dict[str, Any] | None = None


def activation_history(before_turn: Projection, from_turn: list[dict[str, Any]],
                       turn: int, activation: int) -> ActivationHistory:
    """`before_turn` is the projection just before the record `turn` (its `turn_started`);
    `from_turn` every record from it on."""
    if not from_turn or from_turn[0]["seq"] != turn or from_turn[0]["kind"] != TURN_STARTED:
        raise ValueError(f"the history does not start at turn_started {turn}")
    split = next((i for i, r in enumerate(from_turn) if r["seq"] == activation), None)
    if split is None or from_turn[split]["kind"] != ACTIVATION_STARTED:
        raise ValueError(f"no activation_started {activation} after turn_started {turn}")
    base = fold_all(before_turn, from_turn[:split + 1])
    return ActivationHistory(base, tuple(from_turn[split + 1:]), from_turn[0].get("input"),
                             from_turn[0].get("limits"))


class Replay:
    """One resumed activation's replay, fed its guest calls in order (on its own thread)."""

    def __init__(self, session_id: str, limits: Limits, history: ActivationHistory,
                 turn: int, activation: int, passed_over: frozenset[str] = frozenset()) -> None:
        """`passed_over`: kinds of records no guest call commits that may stand among the
        activation's (an offline replay of a cancelled turn meets its `cancel_requested`):
        folded where they stand, never compared."""
        self._state = SessionState(session_id, limits, phase=Phase.RUNNING,
                                   projection=history.base,
                                   turn=Turn(turn, activation, None))
        self._records = history.records
        self._cursor = 0
        self._calls = 0
        self._at = history.base.updated_at or 0
        self._passed_over = passed_over
        self._pass_over()
        self.done = self._cursor == len(self._records)

    @property
    def position(self) -> int:
        """How many of the activation's journaled records the replay has gone past."""
        return self._cursor

    @property
    def calls(self) -> int:
        """Guest calls replayed so far (the live calls after the replay are numbered by the
        session actor's own counter, not from this)."""
        return self._calls

    def answer(self, op: dict[str, Any]) -> dict[str, Any]:
        """The answer the guest got to this call the first time; raises Diverged."""
        self._calls += 1
        call = self._calls
        name = op.get("op")
        what = f"guest call #{call} ({name})"
        self._pass_over()
        hands = _ReplayHands(self, what)
        step = core.step(self._state, GuestCall(call, op), self._next_at())
        carry_out(step, Mode.REPLAY, hands)  # its records matched, never written
        answer = hands.answers.get(call)
        while answer is None:  # it waits on effects: their journaled outcomes, in order
            batch = self._outcome(what)
            step = core.step(self._state, RecordedOutcome(batch), batch[0]["at"])
            hands.matching = False  # the outcomes are the journal's own records
            carry_out(step, Mode.REPLAY, hands)
            answer = hands.answers.get(call)
        self._pass_over()
        if self._cursor == len(self._records):
            self.done = True
        return answer

    def _pass_over(self) -> None:
        records = self._records
        while self._cursor < len(records) and records[self._cursor]["kind"] in self._passed_over:
            projection = fold(self._state.projection, records[self._cursor])
            self._state = evolve(self._state, {"projection": projection})
            self._cursor += 1

    def returned(self) -> Diverged:
        """The guest returned while replaying: what it did the first time is not done."""
        record = self._records[self._cursor]
        return Diverged(f"the Agentloop returned after guest call #{self._calls}, but the "
                        f"first time it went on to record {_describe(record)}",
                        journaled=record)

    def _next_at(self) -> int:
        if self._cursor < len(self._records):
            self._at = self._records[self._cursor]["at"]
        return self._at

    def _match(self, produced: tuple[dict[str, Any], ...], what: str) -> None:
        for record in produced:
            self._pass_over()
            if self._cursor >= len(self._records):
                raise Diverged(f"{what} asks to record {_describe(record)}, past the end of "
                               "what its activation journaled", asked=record)
            journaled = self._records[self._cursor]
            differs = _differing_fields(record, journaled)
            if differs:
                raise Diverged(f"{what} asks to record {_describe(record)}, but the journal "
                               f"holds {_describe(journaled)} (differing in "
                               f"{', '.join(differs)})", asked=record, journaled=journaled)
            self._cursor += 1

    def _outcome(self, what: str) -> tuple[dict[str, Any], ...]:
        """The next journaled effect terminal for an effect the guest waits on, with the Tool
        Events committed beside it."""
        self._pass_over()
        if self._cursor >= len(self._records):
            raise Diverged(f"{what} waits for an effect whose outcome the journal does not hold")
        terminal = self._records[self._cursor]
        pending = self._state.turn.pending if self._state.turn is not None else {}
        if terminal["kind"] not in _TERMINALS or terminal.get("started") not in pending:
            raise Diverged(f"{what} waits for its effects, but the journal holds "
                           f"{_describe(terminal)} next", journaled=terminal)
        end = self._cursor + 1
        while end < len(self._records) and _is_event_of(self._records[end], terminal["started"]):
            end += 1
        batch = self._records[self._cursor:end]
        self._cursor = end
        return batch


class _ReplayHands:
    """Carrying out a replayed Step (`Mode.REPLAY`): its records are checked against the
    journal instead of written, its state becomes the replay's, and its guest answers are
    kept for the guest; nothing is sent."""

    def __init__(self, replay: Replay, what: str) -> None:
        self._replay = replay
        self._what = what
        self.matching = True  # False for a Step of journaled outcomes: nothing to compare
        self.answers: dict[int, dict[str, Any]] = {}

    def commit(self, records: tuple[dict[str, Any], ...]) -> None:
        if self.matching:
            self._replay._match(records, self._what)

    def adopt(self, state: SessionState) -> None:
        self._replay._state = state

    def answer(self, reply: Any) -> None:
        self.answers[reply.call_id] = reply.result


def _is_event_of(record: dict[str, Any], started: int) -> bool:
    origin = record.get("origin") or {}
    return (record["kind"] == EXTENSION_EVENT and origin.get("kind") == "tool"
            and origin.get("sequence") == started)


def _differing_fields(produced: dict[str, Any], journaled: dict[str, Any]) -> list[str]:
    keys = (produced.keys() | journaled.keys()) - _UNCOMPARED
    return sorted(k for k in keys if produced.get(k, _MISSING) != journaled.get(k, _MISSING))


_MISSING = object()


def _describe(record: dict[str, Any]) -> str:
    kind = record["kind"]
    detail = ""
    if kind in (KV_PUT, KV_DELETE):
        detail = f" of key {record.get('key')!r}"
    elif kind == TOOL_CALL_STARTED:
        detail = f" of Tool {record.get('tool')!r}"
    elif kind == EXTENSION_EVENT:
        detail = f" {record.get('name')!r}"
    elif kind == MODEL_CALL_STARTED:
        detail = f" with {record.get('message_count')} messages"
    elif kind == TRANSCRIPT_CHANGED:
        detail = f" from item {record.get('start')}"
    return f"{kind}{detail} at sequence {record['seq']}"
