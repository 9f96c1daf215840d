"""Properties of the session core over any sequence of inputs (hypothesis).

Whatever arrives, in whatever order (commands, guest calls, outcomes for any effect or for none,
the activation's end, timers, a damaged journal, a crash and restart):
- every effect gets at most one terminal record, and only after its `*_started`;
- no effect is sent (or cancelled) unless the record that fences it is in the same Step or an
  earlier one, and none is sent twice;
- a restart sends nothing for the effects it finds unfinished;
- the phase and the state agree, and a step never changes the state it was given;
and once the work in flight is over, every `*_started` has exactly one terminal record.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brain.effects import Outcome
from brain.journal import empty_projection, fold_all
from brain.journal.projection import EFFECT_STARTS, EFFECT_TERMINALS
from brain.protocol.effects import CancelEffect, RunEnvironmentOp, RunModelCall, RunToolCall
from brain.protocol.messages import CancelGrace, CreateSession, IdleTimeout, TurnDeadline
from brain.sessions.state import (
    ENVIRONMENT_PHASES,
    TURN_PHASES,
    ActivationFinished,
    GuestAnswer,
    Opened,
    Phase,
    RemoveFiles,
    Step,
    new_session,
)
from tests.sessions.harness import COMMANDS, ENVIRONMENTS, LIMITS, Session, config

RUNS = (RunModelCall, RunToolCall, RunEnvironmentOp)

COMMAND_MOVES = [*COMMANDS, "create_with_environments", "send", "send", "submit"]
MOVES = {
    "command": st.tuples(st.just("command"), st.sampled_from(COMMAND_MOVES)),
    "guest": st.tuples(st.just("guest"),
                       st.sampled_from(["model", "model", "tools", "tools", "emit", "kv", "bad"])),
    "done": st.tuples(st.just("done"), st.integers(0, 4), st.sampled_from(list(Outcome))),
    "finish": st.tuples(st.just("finish"), st.sampled_from(["completed", "failed", "trapped"])),
    "timer": st.tuples(st.just("timer"), st.sampled_from(["deadline", "grace", "idle"])),
    "damage": st.tuples(st.just("damage")),
    "crash": st.tuples(st.just("crash")),
}
# Most moves are the common ones; a damaged journal or a crash now and then.
WEIGHTED = ["command"] * 6 + ["guest"] * 6 + ["done"] * 6 + ["finish"] * 2 + ["timer"] * 2 \
    + ["damage", "crash"]
moves = st.sampled_from(WEIGHTED).flatmap(MOVES.__getitem__)


class Checked(Session):
    """A Session whose every Step is checked against the invariants as it is taken."""

    def __init__(self) -> None:
        super().__init__(LIMITS)
        self.disk: list[dict[str, Any]] = []  # the journal as committed so far
        self.kind_of: dict[int, str] = {}  # started seq → its *_started kind
        self.terminal_of: dict[int, int] = {}  # started seq → its terminal's seq
        self.sent_runs: set[int] = set()
        self.answered: set[int] = set()

    def feed(self, event: Any) -> Step:
        before = self.state
        fields, turn = dict(vars(before)), dict(vars(before.turn)) if before.turn else None
        step = super().feed(event)
        assert vars(before) == fields, "step changed the state it was given"
        assert (dict(vars(before.turn)) if before.turn else None) == turn
        self.check(step)
        return step

    def check(self, step: Step) -> None:
        for record in step.records:
            assert record["seq"] == len(self.disk) + 1, "sequences are contiguous"
            self.disk.append(record)
            kind = record["kind"]
            if kind in EFFECT_STARTS:
                self.kind_of[record["seq"]] = kind
            elif kind in EFFECT_TERMINALS:
                started = record["started"]
                assert self.kind_of.get(started) == kind.rsplit("_", 1)[0] + "_started", \
                    f"{kind} for {started}, which is no {kind.rsplit('_', 1)[0]} started"
                assert started not in self.terminal_of, f"a second terminal for {started}"
                self.terminal_of[started] = record["seq"]
        for send in step.sends:
            message = send.message
            if isinstance(message, RUNS + (CancelEffect,)):
                assert message.started in self.kind_of, \
                    f"{type(message).__name__} {message.started} sent with no record fencing it"
            if isinstance(message, RUNS):
                assert message.started not in self.sent_runs, "an effect sent twice"
                assert message.started not in self.terminal_of, "an effect sent after its end"
                self.sent_runs.add(message.started)
        for reply in step.replies:
            if isinstance(reply, GuestAnswer):
                assert reply.call_id not in self.answered, "a guest call answered twice"
                self.answered.add(reply.call_id)
        if RemoveFiles() in step.actions:
            self.disk, self.kind_of, self.terminal_of, self.sent_runs = [], {}, {}, set()
        state = step.state
        assert (state.projection is None) == (state.phase is Phase.CLOSED)
        assert (state.turn is not None) == (state.phase in TURN_PHASES)
        assert (state.environments is not None) == \
            (state.phase in set(ENVIRONMENT_PHASES.values()))
        if state.projection is not None:
            assert state.projection.last_seq == len(self.disk)

    def outstanding(self) -> list[int]:
        state = self.state
        out = set(state.turn.pending) if state.turn else set()
        if state.environments:
            out |= state.environments.waiting
        return sorted(out)

    def crash(self) -> None:
        """The process dies; a new actor opens the journal as it is on disk."""
        self.state = new_session(self.state.session_id, LIMITS)
        if not self.disk:
            return
        step = self.feed(Opened(fold_all(empty_projection(), self.disk)))
        assert step.sends == (), "a restart never sends an effect again"

    def play(self, move: tuple) -> None:
        what = move[0]
        if what == "command":
            if self.state.phase is Phase.CLOSED and self.state.damage is None:
                self.feed(Opened(fold_all(empty_projection(), self.disk)))  # the actor opens
            if move[1] == "create_with_environments":
                self.command(CreateSession(config(environments=ENVIRONMENTS), []))
            else:
                self.command(COMMANDS[move[1]](), set_up=frozenset({"work"}))
        elif what == "guest":
            self.guest_move(move[1])
        elif what == "done":
            outstanding = self.outstanding()
            started = outstanding[move[1] % len(outstanding)] if outstanding \
                and move[1] < 4 else 10_000 + move[1]
            error = None if move[2] is Outcome.OK else {"message": "m"}
            self.done(started, move[2], result={"content": "c", "is_error": False},
                      error=error)
        elif what == "finish":
            turn = self.state.turn.sequence if self.state.turn else 1
            result = {"status": move[1], "output": "o"} if move[1] != "trapped" else None
            error = {"code": "agentloop_error", "message": "trap"} if result is None else None
            self.feed(ActivationFinished(turn, result, error))
        elif what == "timer":
            turn = self.state.turn.sequence if self.state.turn else 1
            self.feed({"deadline": TurnDeadline(turn), "grace": CancelGrace(turn),
                       "idle": IdleTimeout(self.state.idle_generation)}[move[1]])
        elif what == "damage":
            if self.state.idle:  # the CRC pass runs only between commands
                self.damaged()
        elif what == "crash":
            self.crash()

    def guest_move(self, op: str) -> None:
        if op == "model":
            self.guest("model.call", messages=[{"role": "user", "content": "x"}])
        elif op == "tools":
            self.guest("tools.call", calls=[{"name": "echo"}, {"name": "clock"}])
        elif op == "emit":
            self.guest("events.emit", kind="progress", data="x" * 60)
        elif op == "kv":
            self.guest("kv.put", key="k", value=1)
        else:
            self.guest("model.call", messages="not a list")

    def quiesce(self) -> None:
        """Let the work in flight end as it would: outcomes arrive, the guest returns."""
        for _ in range(10):
            if self.state.phase in (Phase.CLOSED, Phase.IDLE):
                return
            if self.state.environments:
                for started in sorted(self.state.environments.waiting):
                    self.done(started, result={})
            elif self.state.turn:
                turn = self.state.turn.sequence
                self.feed(ActivationFinished(turn, {"status": "completed", "output": 1}, None))
        raise AssertionError(f"still {self.state.phase} after the work in flight ended")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["none", "plain", "with_environments"]),
       st.lists(moves, min_size=20, max_size=60))
def test_any_sequence_of_inputs_keeps_the_effect_rules(start: str, sequence: list[tuple]) -> None:
    session = Checked()
    session.open()
    if start != "none":
        environments = ENVIRONMENTS if start == "with_environments" else []
        session.command(CreateSession(config(environments=environments), []))
    for move in sequence:
        session.play(move)
    session.quiesce()
    unfinished = set(session.kind_of) - set(session.terminal_of)
    assert not unfinished, f"started with no terminal record: {sorted(unfinished)}"
