"""`Tx`: one step of the session core in progress (brain/sessions/core.py).

The handlers of core.py, turns.py and guest_ops.py change the state and add records, sends,
actions, replies and timers through a Tx; `done` freezes them into the Step the actor carries
out. `commit` is where a record gets its `seq` and `at`, exactly as the journal will assign them
(the next sequences; the step's time, never earlier than the last record's), so the core decides
on the projection as it will be once the batch is durable.
"""

from __future__ import annotations

from typing import Any, TypeVar

from brain import errors
from brain.journal import fold_all
from brain.sessions.state import (
    Action,
    ClientReply,
    GuestAnswer,
    Requester,
    Send,
    SessionState,
    Step,
    Timer,
)
from brain.sessions.views import session_view


class Tx:
    """One step in progress: the state as it changes, and what has been decided so far."""

    def __init__(self, state: SessionState, now_ms: int) -> None:
        self.state = state
        self.now_ms = now_ms
        self.records: list[dict[str, Any]] = []
        self.sends: list[Send] = []
        self.actions: list[Action] = []
        self.replies: list[ClientReply | GuestAnswer] = []
        self.timers: list[Timer] = []
        self.notes: list[str] = []
        self.checkpoint = False

    def set(self, **changes: Any) -> None:
        self.state = evolve(self.state, changes)

    def set_turn(self, **changes: Any) -> None:
        self.state = evolve(self.state, {"turn": evolve(self.state.turn, changes)})

    def commit(self, *batch: dict[str, Any]) -> list[dict[str, Any]]:
        """Give the records their `seq` and `at` as the journal will, and fold them in."""
        projection = self.state.projection
        assert projection is not None, "no journal is open"
        at = max(self.now_ms, projection.updated_at or 0)
        first = projection.last_seq + 1
        full = [{"seq": first + i, "kind": record["kind"], "at": at, **record}
                for i, record in enumerate(batch)]
        self.set(projection=fold_all(projection, full))
        self.records.extend(full)
        return full

    def send(self, to: str, message: Any) -> None:
        self.sends.append(Send(to, message))

    def act(self, action: Action) -> None:
        self.actions.append(action)

    def reply(self, requester: Requester, *, body: dict[str, Any] | None = None,
              error: errors.BrainError | None = None) -> None:
        if requester.reply_to is not None:  # fire-and-forget commands (Recover) want none
            self.replies.append(ClientReply(requester, body, error))

    def answer(self, call_id: int, result: dict[str, Any]) -> None:
        self.replies.append(GuestAnswer(call_id, result))

    def timer(self, secs: float, payload: Any) -> None:
        self.timers.append(Timer(secs, payload))

    def view(self) -> dict[str, Any]:
        return session_view(self.state.session_id, self.state.projection)

    def done(self) -> Step:
        return Step(self.state, tuple(self.records), tuple(self.sends), tuple(self.actions),
                    tuple(self.replies), self.checkpoint, tuple(self.timers), tuple(self.notes))


T = TypeVar("T")


def evolve(value: T, changes: dict[str, Any]) -> T:
    """A copy of the frozen dataclass `value` with `changes`, which must name its fields.

    What `dataclasses.replace` does, without re-running `__init__` over every field: a step
    makes several changes, and the session actor takes a step per guest call and outcome.
    """
    if not changes.keys() <= value.__dataclass_fields__.keys():
        raise TypeError(f"{type(value).__name__} has no field {sorted(changes)}")
    new = object.__new__(type(value))
    new.__dict__.update(value.__dict__)
    new.__dict__.update(changes)
    return new

