"""What a fork of a session at one sequence starts from, decided from the parent's journal.

A fork is a new session whose journal begins with `forked_from {session_id, sequence}`, then the
parent's `session_created` config and, copied once, its transcript and kv as they stood at that
sequence (docs/concepts.md, "Forks"). The child is created like any session, so it never reads
the parent's files again. Deciding it takes a read of the parent's journal (its status, then its
projection at the sequence: brain/journal/projection_at.py), made by the caller: the parent's
actor is never woken, and the parent may be running a turn meanwhile.

Refused: a sequence past the parent's last record (`sequence_beyond_end`), one inside a turn,
from its `turn_started` up to the record that ends it (`fork_inside_turn`: the turn's state is
half made, and its effects belong to the parent), and one before the parent's `session_created`.
"""

from __future__ import annotations

from brain import errors
from brain.journal.projection import Projection
from brain.protocol.messages import CreateSession


def refuse_past_end(at_sequence: int, last_sequence: int) -> None:
    """Raise `sequence_beyond_end` for a sequence past the parent's last committed record as
    its status read it, before its journal is read at that sequence."""
    if at_sequence > last_sequence:
        raise errors.SequenceBeyondEnd(
            f"at_sequence {at_sequence} is past the session's last record ({last_sequence})")


def fork_command(parent_id: str, record: Projection, batch: Projection,
                 at_sequence: int) -> CreateSession:
    """The create command of a fork at `at_sequence`, whose parent projection is `record`
    through that record and `batch` through the end of its batch.

    Whether the sequence may be forked is judged at the record itself; what is copied is the
    state once its batch was committed, the only state a reader could see (a fork at the
    `session_created` of a seeded session copies the seeded messages, committed with it; one
    at a fork's `forked_from` copies what that fork copied).
    """
    if record.last_seq < at_sequence:
        raise errors.SequenceBeyondEnd(
            f"at_sequence {at_sequence} is past the session's last record ({record.last_seq})")
    if batch.open_turn is not None:
        batch = record  # a batch that goes on into a turn: its state is the turn's
    if batch.config is None:
        raise errors.InvalidRequest(
            f"at_sequence {at_sequence} comes before the session was created; "
            "fork at its session_created record or later")
    if record.open_turn is not None:
        raise errors.ForkInsideTurn(
            f"at_sequence {at_sequence} falls inside the turn that started at "
            f"{record.open_turn}; fork at {record.open_turn - 1} (before it) or at the record "
            "that ends it, or later")
    return CreateSession(config=dict(batch.config), transcript=list(batch.transcript),
                         kv=dict(batch.kv),
                         forked_from={"session_id": parent_id, "sequence": at_sequence})
