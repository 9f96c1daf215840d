"""Suspended turns: a turn whose guest waits on effects holds no process while it waits.

An executor that has not finished an effect within the suspension grace parks it (its outcome
will go to the registry, not to the session actor) and says so with `Parked`. Once every effect
the guest waits on is parked, the core suspends the turn: the activation's instance is dropped
(`SuspendActivation`) and the session is released with the turn (`ReleaseMe(suspended=...)`),
which the registry keeps, with its deadline, until something for the session arrives. Any
actor then opens the session, gets the turn back with the command (`Opened.suspended`), and
steps the command; an outcome that answers the guest resumes it in a fresh instance
(turns.py, `ResumeActivation`). A command that leaves the guest still waiting (a busy send, an
outcome of one Tool of several) lets the session go again at once.

What the registry keeps is the core's own `Turn`: the parts of a turn that are not in the
journal (who waits for the answer, limits counted so far, the deadline). Everything else is
journaled, and a crash still fails the turn: the registry's table dies with the server, and an
open without the turn finds an interrupted one (recovery.py).
"""

from __future__ import annotations

from brain.protocol.effects import Parked
from brain.protocol.messages import ReleaseMe, TurnDeadline
from brain.sessions.state import REGISTRY, Phase, SessionState, SuspendActivation, Turn
from brain.sessions.tx import Tx


def parked(tx: Tx, msg: Parked) -> None:
    """An executor parked one of the turn's effects; suspend once all it waits on are."""
    turn = tx.state.turn
    if turn is None or msg.started not in turn.pending:
        return  # settled meanwhile (its outcome came through the registry first)
    tx.set_turn(parked=turn.parked | {msg.started})
    if may_stay_suspended(tx.state):
        tx.set_turn(suspended=True)
        tx.act(SuspendActivation())
        _let_go(tx)


def may_stay_suspended(state: SessionState) -> bool:
    """Whether nothing but parked effects is awaited: the guest waits on them alone (it is
    never computing while effects are out), nobody waits on this actor (an end waits for the
    turn here), and the turn is not being stopped (that is bounded by CANCEL_GRACE_SECS)."""
    turn = state.turn
    return (state.phase is Phase.RUNNING and turn is not None and turn.stop_reason is None
            and bool(turn.pending) and turn.pending.keys() <= turn.parked
            and not state.waiting_ends)


def keep_suspended(tx: Tx) -> None:
    """After a command stepped on a suspended turn: still only waiting, let the session go."""
    turn = tx.state.turn
    if turn is not None and turn.suspended and may_stay_suspended(tx.state):
        _let_go(tx)


def _let_go(tx: Tx) -> None:
    state = tx.state
    tx.send(REGISTRY, ReleaseMe(state.session_id, state.handled, suspended=state.turn))


def matches(turn: Turn, projection: object) -> bool:
    """Whether the journal is where the suspended turn left it: the same open turn and
    activation, and exactly its pending effects unfinished (nothing was lost or added)."""
    unfinished = set(getattr(projection, "unfinished_effects", {})) - {turn.activation}
    return (getattr(projection, "open_turn", None) == turn.sequence
            and getattr(projection, "open_activation", None) == turn.activation
            and unfinished == set(turn.pending))


def restore(tx: Tx, turn: Turn) -> None:
    """The suspended turn is this actor's again: its state, and its deadline's timer."""
    phase = Phase.STOPPING if turn.stop_reason is not None else Phase.RUNNING
    tx.set(phase=phase, turn=turn, release_wanted=False)
    if turn.deadline_ms is not None:
        remaining = max(0.0, (turn.deadline_ms - tx.now_ms) / 1000.0)
        tx.timer(remaining, TurnDeadline(turn.sequence))
