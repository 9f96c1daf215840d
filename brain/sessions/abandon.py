"""Who must hear that a session's journal refused a write (brain/actors/session/journal.py,
`JournalSide.abandon`).

A failed commit (disk full, a failed fdatasync) makes the session's in-memory state void: what
it believed committed may not be. The actor answers every client still waiting with `internal`
and reopens the session from what is on disk. Pure, so the rule is tested without an actor.
"""

from __future__ import annotations

from brain.sessions.state import ClientReply, Requester, SessionState, Step


def waiting_clients(before: SessionState, failed: Step | None) -> list[Requester]:
    """Every client that waits on `before` or on the Step whose commit failed, once each.

    The failed Step counts because its command was taken (a turn's `send` waits in its state;
    a `submit`'s receipt was one of its replies) though none of it was carried out.
    """
    states = [before] if failed is None else [before, failed.state]
    found: list[Requester] = []
    for state in states:
        if state.turn is not None and state.turn.requester is not None:
            found.append(state.turn.requester)
        if state.environments is not None:
            found.append(state.environments.requester)
        found.extend(state.waiting_ends)
    if failed is not None:
        found.extend(r.requester for r in failed.replies if isinstance(r, ClientReply))
    unique: dict[str, Requester] = {}
    for who in found:
        if who.reply_to is not None:
            unique.setdefault(who.request_id, who)
    return list(unique.values())
