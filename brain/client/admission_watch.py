"""The rule "wait for admission, then cancel", once, for the sync and the asyncio SDK.

A cancel that reaches the server before the turn is admitted finds the session idle and does
nothing, so the SDK first polls the session until a turn above the `baseline` (the session's
`last_sequence` read before sending) shows, then cancels it if it still runs
(brain/client/cancelling.py explains the whole protocol).

The rule is a generator that does no I/O: it yields what it needs done and is sent the answer,
so `cancelling.py` drives it with blocking calls and `async_session.py` with awaited ones, and
neither keeps a copy of the polling, the back-off or what a failed read or cancel means.
- it yields `READ_STATE` and is sent the session's JSON (or has a BrainClientError thrown in);
- it yields `CANCEL` with a key and is sent the CancelAnswer (or has the error thrown in);
- it yields a float: the seconds to wait for the send, and is sent whether the send is done.
It returns the CancelAnswer it got, or None when no cancel was needed or it failed.
ClientClosed is never caught: a closed client ends the watch. `drive` and `drive_async` run it,
given how to carry out one step; only that differs between the two SDKs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from brain.client.errors import BrainClientError, ClientClosed
from brain.client.keys import new_idempotency_key
from brain.client.shapes import CancelAnswer, TurnState

log = logging.getLogger("brain.client")

FIRST_POLL_SECS = 0.02
MAX_POLL_SECS = 0.5

READ_STATE = "read_state"
CANCEL = "cancel"

Step = Any  # READ_STATE, (CANCEL, key) or a float of seconds to wait
Watch = Generator[Step, Any, CancelAnswer | None]


def cancel_after_admission(session_id: str, baseline: int) -> Watch:
    """Poll until our turn is visible, then cancel it if it still runs."""
    cancel_key = new_idempotency_key()
    pause = FIRST_POLL_SECS
    while True:
        try:
            turn = TurnState.from_json((yield READ_STATE).get("turn"))
        except ClientClosed:
            raise
        except BrainClientError as exc:
            log.warning("session %s: reading the session to observe admission failed: %s",
                        session_id, exc)
            turn = None
        if turn is not None and turn.sequence > baseline:
            if turn.status != "running":
                return None  # finished already; the send is about to return
            try:
                return (yield (CANCEL, cancel_key))
            except ClientClosed:
                raise
            except BrainClientError as exc:
                log.warning("session %s: cancelling turn %d failed: %s", session_id,
                            turn.sequence, exc)
                return None
        if (yield pause):
            return None  # the send returned first
        pause = min(MAX_POLL_SECS, pause * 2)


def drive(watch: Watch, perform: Callable[[Step], Any]) -> CancelAnswer | None:
    """Run `watch`, carrying out each step with the blocking `perform`."""
    try:
        step = next(watch)
        while True:
            try:
                answer = perform(step)
            except BrainClientError as exc:
                step = watch.throw(exc)
            else:
                step = watch.send(answer)
    except StopIteration as stop:
        return stop.value


async def drive_async(watch: Watch, perform: Callable[[Step], Awaitable[Any]]
                      ) -> CancelAnswer | None:
    """Run `watch`, carrying out each step with the awaited `perform`."""
    try:
        step = next(watch)
        while True:
            try:
                answer = await perform(step)
            except BrainClientError as exc:
                step = watch.throw(exc)
            else:
                step = watch.send(answer)
    except StopIteration as stop:
        return stop.value
