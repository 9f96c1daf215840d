"""Guest calls the Agentloop's thread carries out itself, without waking the session actor.

A guest call that goes to the actor is posted through the bridge, picked up by a pass of
Thespian's loop, stepped, committed and answered. For a call that only reads the session or
commits a record (`transcript.read`/`set`, `kv.*`, `events.emit`), the actor's loop adds
nothing but a thread hand-off each way, four times in a plain text turn.

So the activation's thread steps the session core itself, under the lock the actor holds while
it handles any message: the two never step the core at once, and each step still sees every
step before it. The step is carried out in that thread, by the same function as on the actor's
(brain/sessions/carry_out.py, `Mode.INLINE`), only when it consists of records to commit and
the answer to this call: the commit (one write, one fdatasync) comes first, then the answer.
Which ops may come this way the core says (`guest_ops.LOCAL_OPS`). A step that would send
a message, start or stop anything, set a timer or answer a client is thrown away unapplied
(the core is pure, so nothing of it happened) and the call goes to the actor over the bridge;
so does every call when the session is not in the middle of this activation's turn. Only the
actor's thread ever sends.

The actor (brain/actors/session/actor.py) holds this as `actor.inline` and gives its
`guest_call` to each activation it starts.

A commit that fails here is not handled here: the call goes to the actor, whose own step finds
the journal's writer refusing (a failed write poisons it) and abandons the session as every
failed commit does.
"""

from __future__ import annotations

import time
from typing import Any

from brain.actors.session.activation import PendingGuestCall
from brain.actors.session.journal import CommitFailed
from brain.sessions import core
from brain.sessions.carry_out import Mode, fits
from brain.sessions.guest_ops import LOCAL_OPS
from brain.sessions.state import GuestCall


class InlineCalls:
    """The inline path: a guest call carried out on the activation's own thread, under the
    actor's `state_lock` (which the actor's `receiveMessage` holds while it handles any
    message).

    Holds no state of its own. It reads the actor's `core`, `_void_activations` and
    `next_call_id`; when it carries a call out it takes the next call id, files the call in the
    actor's `guest_calls` and carries the step out by the actor's `_carry_out` (which commits
    and answers); otherwise it changes nothing, and the call goes to the actor.
    """

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    def guest_call(self, call: PendingGuestCall) -> bool:
        """Called on the activation's thread: True when the call was carried out and answered
        here, False when it must go to the actor."""
        if call.op.get("op") not in LOCAL_OPS:
            return False
        actor = self._actor
        with actor.state_lock:
            state = actor.core
            if state is None or state.turn is None or state.turn.sequence != call.turn \
                    or call.activation in actor._void_activations:
                return False
            call_id = actor.next_call_id + 1
            step = core.step(state, GuestCall(call_id, call.op), time.time_ns() // 1_000_000)
            if not fits(step, Mode.INLINE) or step.replies[0].call_id != call_id:
                return False
            actor.next_call_id = call_id
            actor.guest_calls[call_id] = call
            try:
                actor._carry_out(step, inline=True)
            except CommitFailed:
                del actor.guest_calls[call_id]  # the actor's step meets the refusing writer
                return False
            return True
