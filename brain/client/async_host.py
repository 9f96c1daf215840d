"""Serving `host` Tools and Environments from asyncio code: `await async_brain.serve_host(...)`.

The asyncio twin of brain/client/host.py, with the same protocol, promises and decisions (all
taken by brain/client/host_loop.py, which both servers carry out): an
AsyncHostServer long-polls Brain (POST /v1/host/poll) from a task on the caller's event loop,
with connections of its own, runs each call it is given as a task (at most `max_concurrency`
at once: it asks for no more calls than it has free slots), and POSTs the answer once (POST
/v1/host/calls/{call_id}). Nothing is retried: an answer whose POST failed after it may have
been sent is logged, and Brain records the call as it stands (`unknown` if it did not arrive).

Handlers take the same `HostCall` and return the same shapes as the sync server's. An `async
def` handler runs on the loop; any other callable runs in a worker thread (`asyncio.to_thread`)
so that blocking code never stalls the loop or the poll, and an awaitable it returns is then
awaited on the loop.

When Brain cancels a call, the call's `signal` fires and, for a handler running on the loop,
the handler's task is cancelled: the asyncio way, so `await child.send(...)` inside it cancels
the child's turn too (docs/client.md, "Cancelling an awaited send"). A thread cannot be
cancelled, so a handler running in one sees only its signal, as under the sync server. A
handler that lets the CancelledError out answers as a sync handler that raised after its signal
fired: an error result with outcome `cancelled`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, Self

from brain.client.async_api import AsyncApi, AsyncTransport
from brain.client.errors import BrainClientError
from brain.client.host import HostCall, set_task_call
from brain.client.host_answers import log_unposted
from brain.client.host_loop import (
    BRAIN_CANCELLED,
    SERVER_STOPPED,
    HostServerBase,
    Job,
    answer_call,
    cancelled_answer,
    log,
)

UNWIND_SECS = 1.0  # how long aclose() waits for cancelled handlers to unwind

AsyncToolHandler = Callable[[HostCall], Any]


class HostingClient(Protocol):
    """What an AsyncHostServer takes from the AsyncBrain that starts it."""

    def _new_transport(self, max_idle: int) -> AsyncTransport: ...

    def _disown(self, part: AsyncHostServer) -> None: ...


@dataclass
class _Running:
    """A call being served: its task (handler, then the answer's POST) and its handler's."""

    call: HostCall
    task: asyncio.Task[None] | None = None
    handler: asyncio.Task[dict[str, Any]] | None = None
    in_thread: bool = False  # the handler runs in a worker thread: only its signal can reach it


def runs_on_loop(handler: Any) -> bool:
    """True for an `async def` function or method, or an object whose `__call__` is one."""
    return inspect.iscoroutinefunction(handler) or \
        (callable(handler) and inspect.iscoroutinefunction(type(handler).__call__))


class AsyncHostServer(HostServerBase):
    """A running asyncio host: see `AsyncBrain.serve_host`. Stop it with `await aclose()`,
    `async with`, or by closing its client."""

    def __init__(self, brain: HostingClient, tools: Mapping[str, AsyncToolHandler] | None = None,
                 environments: Mapping[str, Any] | None = None, *, wait_secs: float = 25.0,
                 max_concurrency: int = 16) -> None:
        super().__init__(brain, tools, environments, wait_secs, max_concurrency)
        self._api = AsyncApi(brain._new_transport(max_idle=2))
        self._running: dict[str, _Running] = {}
        self._stopping = asyncio.Event()
        self._poller: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> Self:
        """Start polling from a task on the running event loop."""
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll_forever(),
                                               name=f"brain-host-{self.host_id}")
        return self

    @property
    def running(self) -> bool:
        return self._poller is not None and not self._poller.done()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- stopping ---------------------------------------------------------------------------

    async def aclose(self, timeout: float = 5.0) -> bool:
        """Stop taking calls; give running handlers `timeout` s, then cancel them.

        As the sync `stop()`: the poll waiting on the server is released at once (a zero-wait
        poll from this host supersedes it); handlers still running after `timeout` see their
        signal fire and their tasks cancelled, are given a moment to unwind, and their answers
        are not posted. Returns within about `timeout` + 2 s (longer only while a release poll
        waits for an unreachable server, at most 5 s each); True when no handler was left
        running. Idempotent.
        """
        loop = asyncio.get_running_loop()
        until = loop.time() + max(0.0, timeout)
        self._stopping.set()
        poller = self._poller
        if poller is not None and not poller.done() and poller is not asyncio.current_task():
            for _ in range(2):  # a release can overtake the poll it means to end; once more
                await self._release_poll()
                await asyncio.wait({poller}, timeout=min(2.0, max(0.0, until - loop.time()))
                                   or 0.05)
                if poller.done():
                    break
            poller.cancel()  # a poll still waiting (a release that never arrived) is cut off
            await asyncio.wait({poller}, timeout=UNWIND_SECS)
        mine = asyncio.current_task()
        tasks = {r.task for r in self._running.values() if r.task not in (None, mine)}
        if tasks and until > loop.time():
            await asyncio.wait(tasks, timeout=until - loop.time())
        left = [r for r in self._running.values() if r.task is not mine]
        for running in left:
            running.call.signal.cancel(SERVER_STOPPED)
            if running.task is not None:
                running.task.cancel()
        unwinding = {t for r in left for t in (r.task, r.handler)
                     if t is not None and not t.done() and t is not mine}
        if unwinding:
            await asyncio.wait(unwinding, timeout=UNWIND_SECS)
        if not self._closed:
            self._closed = True
            await self._api.transport.aclose()  # a POST still in flight is cut off here
            self.brain._disown(self)
        return not left

    async def _release_poll(self) -> None:
        try:
            answer = await self._api.run(self._loop.release())
            self._apply_cancels(self._loop.answered(answer)[1])
        except BrainClientError as exc:
            log.debug("host %s: releasing the waiting poll failed: %s", self.host_id, exc)

    # --- polling ----------------------------------------------------------------------------

    async def _poll_forever(self) -> None:
        while not self._stopping.is_set():
            try:
                answer = await self._api.run(self._loop.poll(len(self._running)))
            except BrainClientError as exc:
                pause = self._loop.failed(exc, self._stopping.is_set())
                if pause is None:
                    return
                try:
                    await asyncio.wait_for(self._stopping.wait(), pause)
                except TimeoutError:
                    pass
                continue
            calls, cancels = self._loop.answered(answer)
            for item in calls:
                self._start_call(HostCall.from_json(item, self.brain))  # type: ignore[arg-type]
            self._apply_cancels(cancels)

    def _apply_cancels(self, call_ids: list[str]) -> None:
        for call_id in call_ids:
            running = self._running.get(call_id)
            if running is None:
                continue
            running.call.signal.cancel(BRAIN_CANCELLED)
            if running.handler is not None and not running.in_thread:
                running.handler.cancel(BRAIN_CANCELLED)

    # --- running calls ----------------------------------------------------------------------

    def _start_call(self, call: HostCall) -> None:
        running = self._running[call.call_id] = _Running(call)
        running.task = asyncio.create_task(self._serve(running),
                                           name=f"brain-host-call-{call.call_id}")
        running.task.add_done_callback(lambda task: self._finished(call.call_id, task))

    def _finished(self, call_id: str, task: asyncio.Task[None]) -> None:
        self._running.pop(call_id, None)
        if not task.cancelled() and task.exception() is not None:
            log.error("host call %s: serving it failed", call_id, exc_info=task.exception())

    async def _serve(self, running: _Running) -> None:
        """Run the handler in a task of its own (Brain's cancel reaches it alone, never the
        answer's POST), then post what it came to. Cancelled itself (aclose), it posts nothing."""
        call = running.call
        set_task_call(call)  # this task's context, copied into the handler's task and threads
        handler = running.handler = asyncio.create_task(self._answer(running),
                                                        name=f"brain-host-handler-{call.call_id}")
        if call.signal.cancelled:  # Brain's cancel came before this task first ran
            handler.cancel(call.signal.reason)
        try:
            await asyncio.wait({handler})
        except asyncio.CancelledError:
            handler.cancel(SERVER_STOPPED)
            raise
        if handler.cancelled():  # `cancelled` only when Brain asked, as for a sync handler
            answer = cancelled_answer(call, call.signal.reason or "the handler was cancelled")
        else:
            answer = handler.result()
        await self._post_answer(call, answer)

    async def _answer(self, running: _Running) -> dict[str, Any]:
        job: Job | dict[str, Any] = self._loop.job(running.call)
        if isinstance(job, dict):
            return job
        try:
            value = await self._invoke(running, job.function, *job.args)
        except Exception as exc:
            return job.raised(exc)
        return job.returned(value)

    async def _invoke(self, running: _Running, function: Any, *args: Any) -> Any:
        if runs_on_loop(function):
            return await function(*args)
        running.in_thread = True
        try:
            value = await asyncio.to_thread(function, *args)
        finally:
            running.in_thread = False
        if inspect.isawaitable(value):  # e.g. a lambda that returns a coroutine
            value = await value
        return value

    async def _post_answer(self, call: HostCall, answer: dict[str, Any]) -> None:
        """Once. A lost answer is not resent: Brain records the call `unknown` (never rerun)."""
        try:
            await self._api.run(answer_call(call, answer))
        except BrainClientError as exc:
            log_unposted(call.call_id, exc)
