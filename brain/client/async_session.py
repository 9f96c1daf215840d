"""A handle on one session for asyncio code, and its cancellable send.

The asyncio twin of brain/client/session.py (the same methods, cached fields and answer shapes)
and of brain/client/cancelling.py. In asyncio the cancel signal is the task's own cancellation:
cancelling a task (or an `asyncio.timeout`) while it awaits `session.send(...)` follows the
SDK's rule, "wait for admission before cancelling, wait for any issued cancel before returning":

1. The SDK reads the session's `last_sequence` (the baseline), then posts the message in a task
   of its own, always with an Idempotency-Key (the caller's, or a generated one). A cancel that
   arrives while the baseline is read sends nothing and propagates at once.
2. When the caller's task is cancelled while the send runs, the SDK polls the session (20 ms,
   doubling to 500 ms) until its `turn` has a sequence above the baseline, or the send returned;
   if that turn still runs it POSTs cancel (with a generated key) and waits for the answer.
3. It waits for the send's own answer, then re-raises the CancelledError, so asyncio.timeout,
   TaskGroup and `task.cancel()` keep their meaning. The send's TurnResult (normally failed,
   `cancelled`, with `cancel_request` set) is attached to it as `.turn_result`.

Further cancellations of the task during steps 2-3 do not cut them short (each wait is bounded
by the requests' own timeouts). With `signal=CancelSignal()` instead, the same steps run when the
signal fires and `send` returns the TurnResult, exactly like the sync client.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from brain.client import routes
from brain.client.admission_watch import (
    CANCEL,
    READ_STATE,
    cancel_after_admission,
    drive_async,
)
from brain.client.async_api import AsyncApi
from brain.client.async_stream import AsyncEventStream
from brain.client.errors import Cancelled
from brain.client.keys import new_idempotency_key
from brain.client.routes import TurnInput
from brain.client.session import SessionSnapshot
from brain.client.shapes import (
    CancelAnswer,
    Event,
    EventPage,
    Receipt,
    Transcript,
    TurnResult,
)
from brain.client.signal import CancelSignal


class AsyncSession(SessionSnapshot[AsyncApi]):
    """The sync Session's methods, awaited: each runs the same request of brain/client/routes.py."""

    # --- reading ----------------------------------------------------------------------------

    async def refresh(self) -> AsyncSession:
        """Re-read GET /v1/sessions/{id} into the cached fields; never activates the session."""
        self._apply(await self._api.run(routes.get_session(self._path)))
        return self

    async def transcript(self) -> Transcript:
        return await self._api.run(routes.transcript(self._path))

    async def events_page(self, after: int = 0, limit: int | None = None) -> EventPage:
        """One page of committed Events after the exclusive cursor `after`."""
        return await self._api.run(routes.events_page(self._path, after, limit))

    def events(self, cursor: int = 0, *, page_size: int | None = None) -> AsyncIterator[Event]:
        """Every committed Event after `cursor` (`async for`), page after page."""
        self._api.check_open()
        return self._iter_events(cursor, page_size)

    async def _iter_events(self, cursor: int, page_size: int | None) -> AsyncIterator[Event]:
        while True:
            page = await self.events_page(cursor, page_size)
            for event in page.events:
                yield event
            if not page.has_more:
                return
            cursor = page.next_after

    async def follow(self, cursor: int = 0, *, deltas: bool = False,
                     timeout: float | None = None, max_reconnects: int = 5) -> AsyncEventStream:
        """Live Events after `cursor` over SSE, across reconnects; subscribed when it returns."""
        self._api.check_open()
        stream = AsyncEventStream(self._api.transport, self._path + "/events", after=cursor,
                                  deltas=deltas, timeout=timeout, max_reconnects=max_reconnects)
        return await stream.connect()

    # --- turns ------------------------------------------------------------------------------

    async def send(self, input: TurnInput, idempotency_key: str | None = None,
                   signal: CancelSignal | None = None, *,
                   timeout: float | None = None,
                   limits: dict[str, int] | None = None) -> TurnResult:
        """Run a turn and wait for its TurnResult (a failed turn is a result, not an error).

        Cancelling the awaiting task cancels the turn after admission and re-raises the
        CancelledError (with `.turn_result`) once the server answered; see the module's text.
        Always carries an Idempotency-Key (generated if not given): retry an uncertain send
        with `err.idempotency_key`, as a send.
        """
        if signal is not None and signal.cancelled:
            raise Cancelled("the signal had fired before the message was sent; nothing was sent")
        key = idempotency_key or new_idempotency_key()
        baseline = (await self._api.run(routes.get_session(self._path))).get("last_sequence") or 0
        sending = asyncio.create_task(
            self._api.run(routes.send(self._path, input, key, timeout, limits)),
            name=f"brain-send-{self.id}")
        fired = asyncio.Event()
        if signal is not None:
            loop = asyncio.get_running_loop()
            remove = signal.add_callback(lambda: loop.call_soon_threadsafe(fired.set))
        else:
            remove = _nothing
        firing = asyncio.create_task(fired.wait())
        try:
            await asyncio.wait({sending, firing}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError as cancel:
            await _finish(self._cancel_and_collect(baseline, sending), cancel)
            raise  # unreachable: _finish re-raises `cancel`
        finally:
            remove()
            firing.cancel()
        if sending.done():
            return sending.result()
        return await _finish(self._cancel_and_collect(baseline, sending), None)

    async def _cancel_and_collect(self, baseline: int,
                                  sending: asyncio.Task[TurnResult]) -> TurnResult:
        cancel = await self._cancel_after_admission(baseline, sending)
        result = await sending
        return dataclasses.replace(result, cancel_request=cancel) if cancel else result

    async def _cancel_after_admission(self, baseline: int,
                                      sending: asyncio.Task[TurnResult]) -> CancelAnswer | None:
        """Poll until our turn is visible, then cancel it if it still runs; None if not needed
        (brain/client/admission_watch.py, driven with awaited calls)."""
        if sending.done():
            return None
        watch = cancel_after_admission(self.id, baseline)

        async def perform(step: Any) -> Any:
            if step == READ_STATE:
                return await self._api.run(routes.get_session(self._path))
            if isinstance(step, tuple) and step[0] == CANCEL:
                return await self.interrupt(step[1])
            await asyncio.wait({sending}, timeout=step)
            return sending.done()

        return await drive_async(watch, perform)

    async def submit(self, input: TurnInput, idempotency_key: str | None = None, *,
                     limits: dict[str, int] | None = None) -> Receipt:
        """Start a turn without waiting (Prefer: respond-async); always keyed (generated)."""
        key = idempotency_key or new_idempotency_key()
        return await self._api.run(routes.submit(self._path, input, key, limits))

    # --- lifecycle --------------------------------------------------------------------------

    async def interrupt(self, idempotency_key: str | None = None) -> CancelAnswer:
        """POST cancel: stop work in flight; the session stays usable. Idle: sequence None."""
        return await self._api.run(routes.cancel(self._path, idempotency_key))

    async def end(self, idempotency_key: str | None = None, *,
                  timeout: float | None = None) -> AsyncSession:
        """End the session (waits for active work) and cache the ended Session."""
        self._apply(await self._api.run(routes.end(self._path, idempotency_key, timeout)))
        return self

    async def delete(self, idempotency_key: str | None = None) -> None:
        """Remove an ended, failed or damaged session; after TeardownFailed use a new key."""
        await self._api.run(routes.delete(self._path, idempotency_key))

    async def create_token(self) -> str:
        """A bearer token good for this session alone; use it with `brain.with_token(...)`."""
        return await self._api.run(routes.create_token(self._path))

    # --- branching --------------------------------------------------------------------------

    async def fork(self, at_sequence: int, idempotency_key: str | None = None) -> AsyncSession:
        """A new session from this one's state at `at_sequence`; see Session.fork."""
        state = await self._api.run(routes.fork(self._path, at_sequence, idempotency_key))
        return AsyncSession(self._api, state["id"], state)


def _nothing() -> None:
    return None


async def _finish(work: Awaitable[TurnResult],
                  cancel: asyncio.CancelledError | None) -> TurnResult:
    """Run `work` to its end even if this task is cancelled meanwhile.

    When the task was (or gets) cancelled, the CancelledError is re-raised afterwards with the
    outcome attached as `.turn_result` (None if the send itself failed: then that failure is
    the CancelledError's cause). Otherwise the result is returned.
    """
    job = asyncio.ensure_future(work)
    while True:
        try:
            await asyncio.shield(job)
            break
        except asyncio.CancelledError as exc:
            if job.cancelled():
                raise  # the loop itself is tearing the work down
            cancel = cancel or exc
            if job.done():
                break
    if cancel is None:
        return job.result()
    failure = job.exception()
    cancel.turn_result = None if failure else job.result()  # type: ignore[attr-defined]
    if failure is not None:
        raise cancel from failure
    raise cancel
