"""How a Step of the session core is carried out: one order, four modes.

The core decides (`core.step` returns a Step); whoever holds the session carries the Step out,
and a Step means the same wherever that happens. This function is the one place that says in
which order its parts happen, and which parts each mode may carry out:

- `FULL`, the session actor's own thread: everything.
- `INLINE`, the Agentloop's thread (brain/actors/session/inline.py): only a Step of records and
  the answer to the one guest call it was made for; anything more goes to the actor's thread.
- `ADMISSION`, a web worker admitting a submitted turn with no actor (brain/web/admission.py):
  only records and the client's one reply.
- `REPLAY`, a resumed activation's replay (brain/sessions/replay.py): the records are matched
  against what the journal already holds, never written, and nothing is sent again: what the
  activation did the first time is done.

The order, in every mode: the records are committed (one write, one fdatasync) before the state
that folds them is taken, before any message that depends on them is sent, and before anyone,
client or guest, is answered; then actions, then answers, then the checkpoint, the timers, the
notes, and last the release (a client's answer never waits behind it).

What is carried out is done by the holder's `Hands`; the core and this function stay pure.
"""

from __future__ import annotations

import enum
from typing import Any, Protocol

from brain.sessions.state import REGISTRY, ClientReply, GuestAnswer, SessionState, Step


class Mode(enum.Enum):
    FULL = "full"
    INLINE = "inline"
    ADMISSION = "admission"
    REPLAY = "replay"


class NotInMode(Exception):
    """The Step needs more than its mode can carry out: hand it to the actor's thread."""


class Hands(Protocol):
    """What carrying out a Step needs done; each holder does what its mode allows."""

    def commit(self, records: tuple[dict[str, Any], ...]) -> None:
        """Make the records durable (or, replaying, check them against the journal)."""

    def adopt(self, state: SessionState) -> None:
        """Take the Step's state as the session's."""

    def send(self, target: str, messages: list[Any]) -> None:
        """Messages to one target, in order (an executor's, fenced by the commit)."""

    def act(self, action: Any) -> None: ...

    def answer(self, reply: ClientReply | GuestAnswer) -> None: ...

    def answered(self) -> None:
        """After every answer of the Step (the trace spans of its commits)."""

    def checkpoint(self) -> None: ...

    def arm(self, secs: float, payload: Any) -> None: ...

    def note(self, text: str) -> None: ...

    def release(self, message: Any) -> None: ...

    def at_rest(self) -> None:
        """The session is idle after a Step with no release: its metrics go now."""


def fits(step: Step, mode: Mode) -> bool:
    """Whether `mode` carries out all of `step`."""
    if mode in (Mode.FULL, Mode.REPLAY):
        return True
    if step.sends or step.actions or step.timers or step.checkpoint or len(step.replies) != 1:
        return False
    if mode is Mode.INLINE:
        return not step.state.idle and isinstance(step.replies[0], GuestAnswer)
    return isinstance(step.replies[0], ClientReply)  # ADMISSION


def carry_out(step: Step, mode: Mode, hands: Hands) -> None:
    """Carry out `step` in `mode`; NotInMode, with nothing done, when it does not fit."""
    if not fits(step, mode):
        raise NotInMode(mode.value)
    if step.records:
        hands.commit(step.records)  # durable before anything below happens
    hands.adopt(step.state)
    if mode is Mode.REPLAY:
        for reply in step.replies:  # the guest's answers; the effects were sent the first time
            if isinstance(reply, GuestAnswer):
                hands.answer(reply)
        return
    releases = []
    by_target: dict[str, list[Any]] = {}
    for send in step.sends:  # effects fenced by the records just committed
        if send.to == REGISTRY:
            releases.append(send.message)
        else:
            by_target.setdefault(send.to, []).append(send.message)
    for target, messages in by_target.items():  # several to one target: sent together
        hands.send(target, messages)
    for action in step.actions:
        hands.act(action)
    for reply in step.replies:  # clients and the guest see only what is durable
        hands.answer(reply)
    hands.answered()
    if step.checkpoint:
        hands.checkpoint()
    for timer in step.timers:
        hands.arm(timer.secs, timer.payload)
    for note in step.notes:
        hands.note(note)
    if releases:  # last: the client's answer does not wait behind it
        hands.release(releases[0])
    elif step.state.idle:
        hands.at_rest()
