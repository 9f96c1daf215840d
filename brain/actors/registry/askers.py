"""Who waits on a session actor for an answer, as far as the registry can tell.

A session actor answers its requests straight to the web worker's reply inbox; the registry only
forwards them. When the actor's process dies, every request it took and had not answered would
wait until its own timeout (for a sync send, the whole BRAIN_MAX_TURN_SECS) while the session is
already recovered. So the registry remembers, per session it has placed, the askers of the
commands it forwarded there, and hands them to the recovery as `Orphan`s: the new actor answers
each one once the interrupted work is recorded.

The registry does not see answers, so some of these were answered already. A second answer
under a request id the inbox no longer waits for is dropped there (brain/web/reply_inbox.py), so
remembering too many costs nothing but the bound below; a session held for very many commands
remembers its latest ones, which are the ones that can still be waiting.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from brain.protocol.messages import Orphan, StartTurn

ASKERS_KEPT = 64  # per placed session


class Askers:
    """The askers of the commands forwarded to one placed session, latest last."""

    __slots__ = ("_askers",)

    def __init__(self) -> None:
        self._askers: deque[Orphan] = deque(maxlen=ASKERS_KEPT)

    def forwarded(self, request_id: str, command: Any, reply_to: Any) -> None:
        """A command went to the actor on behalf of `reply_to` (None: nobody waits)."""
        if reply_to is not None:
            sync_send = isinstance(command, StartTurn) and command.mode == "send"
            self._askers.append(Orphan(request_id, reply_to, sync_send))

    def resumed(self, turn: Any) -> None:
        """The session's suspended turn went to the actor: a sync send waits for that turn."""
        requester = turn.requester
        if requester is not None and requester.reply_to is not None:
            self._askers.append(Orphan(requester.request_id, requester.reply_to, True))

    def orphans(self) -> tuple[Orphan, ...]:
        return tuple(self._askers)
