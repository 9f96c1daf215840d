"""The registry's table of suspended turns (brain/actors/registry/suspended_turns.py), without
actors."""

from __future__ import annotations

from dataclasses import dataclass

from brain.actors.registry.suspended_turns import SuspendedTurns


@dataclass(frozen=True)
class Turn:
    sequence: int
    deadline_ms: int | None


def test_a_turn_is_kept_until_taken() -> None:
    table = SuspendedTurns()
    turn = Turn(3, None)
    assert table.keep("s", turn) is False  # no deadline: no timer
    assert len(table) == 1
    assert table.take("s") is turn
    assert table.take("s") is None
    assert len(table) == 0


def test_the_timer_is_set_for_the_earliest_deadline_only_when_it_moves_earlier() -> None:
    table = SuspendedTurns()
    assert table.timer_secs(0) is None
    assert table.keep("a", Turn(1, 5_000)) is True
    assert table.timer_secs(1_000) == 4.001
    table.keep("b", Turn(1, 9_000))
    assert table.timer_secs(1_000) is None  # the timer set for 5 s fires first
    table.keep("c", Turn(1, 2_000))
    assert table.timer_secs(1_000) == 1.001
    assert table.timer_secs(3_000) is None


def test_only_turns_still_kept_expire() -> None:
    table = SuspendedTurns()
    table.keep("a", Turn(1, 1_000))
    table.keep("b", Turn(1, 2_000))
    table.keep("c", Turn(1, 9_000))
    table.take("a")  # handed to an actor: its deadline is void here
    table.keep("b", Turn(2, 3_000))  # suspended again, a later turn
    assert list(table.expired(5_000)) == [("b", 2)]
    assert table.timer_secs(5_000) == 4.001  # rearmed after firing: c is still waiting


def test_a_turn_taken_while_expiring_is_not_expired_again() -> None:
    table = SuspendedTurns()
    table.keep("s", Turn(4, 1_000))
    table.keep("s", Turn(4, 1_000))  # the same turn suspended twice
    expired = []
    for session_id, turn in table.expired(2_000):
        expired.append((session_id, turn))
        table.take(session_id)  # its ExpireTurn reached an actor
    assert expired == [("s", 4)]
