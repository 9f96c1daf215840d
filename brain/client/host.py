"""Serving `host` Tools and Environments from this process: `brain.serve_host(...)`.

A HostServer long-polls Brain (POST /v1/host/poll) on a background thread with connections of
its own, runs each call it is given in a thread of its own, and POSTs the answer once
(POST /v1/host/calls/{call_id}). Brain hands a call to one poll answer only, ever, so nothing
here retries: an answer whose POST failed midway may or may not have arrived, and Brain then
records the call as `unknown` rather than run it twice (docs/host-tools.md).

Every decision (what to poll for, what a failure means, which handler runs, what it answers) is
brain/client/host_loop.py's, shared with the asyncio server; this module carries them out with
threads and blocking requests.

When Brain cancels a call (its turn was interrupted or timed out), the next poll answer names
it and the handler's `context.signal` fires; a handler that owns a child session passes it on
with `child.send(text, signal=context.signal)` (docs/concepts.md, "Effects"; docs/host-tools.md).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from brain.client.api import Api
from brain.client.errors import BrainClientError
from brain.client.host_answers import log_unposted
from brain.client.host_loop import (
    BRAIN_CANCELLED,
    SERVER_STOPPED,
    HostServerBase,
    answer_call,
    log,
)
from brain.client.sessions_client import SessionsClient
from brain.client.signal import CancelSignal

ToolHandler = Callable[["HostCall"], Any]

_current = threading.local()
_current_in_task: contextvars.ContextVar[HostCall | None] = contextvars.ContextVar(
    "brain_host_call", default=None)  # set by the asyncio host server for each call's task


@dataclass
class HostCall:
    """One call Brain gave this host: the context a handler receives.

    `sequence` is the `tool_call_started` (or `environment_op_started`) record: with
    `session_id`, the operation's only identifier. `deadline` is a `time.time()` epoch or None.
    `signal` fires when Brain cancels the call or the HostServer stops; `brain` is the client
    that serves (the `Brain` whose `serve_host` started it, or the `AsyncBrain` for an
    AsyncHostServer), for handlers that drive other sessions.
    """

    call_id: str
    kind: str  # "tool" | "environment"
    name: str
    session_id: str
    sequence: int
    deadline: float | None
    brain: SessionsClient
    input: Any = None  # a Tool's input
    op: str | None = None  # an Environment op
    request: dict[str, Any] | None = None  # an Environment op's request
    signal: CancelSignal = field(default_factory=CancelSignal)

    def remaining(self) -> float | None:
        """Seconds until the deadline (never negative), or None when the call has none."""
        return None if self.deadline is None else max(0.0, self.deadline - time.time())

    @classmethod
    def from_json(cls, item: Mapping[str, Any], brain: SessionsClient) -> HostCall:
        return cls(call_id=item["call_id"], kind=item["kind"], name=item["name"],
                   session_id=item["session_id"], sequence=item["sequence"],
                   deadline=item.get("deadline"), brain=brain, input=item.get("input"),
                   op=item.get("op"), request=item.get("request"))


def current_call() -> HostCall | None:
    """The call the calling handler serves (Environment methods receive no context): its
    thread's under a HostServer, its task's (or its worker thread's) under an AsyncHostServer."""
    return getattr(_current, "call", None) or _current_in_task.get()


def set_task_call(call: HostCall | None) -> contextvars.Token[HostCall | None]:
    """Make `call` what `current_call()` answers in this asyncio task and what it starts."""
    return _current_in_task.set(call)


class HostServer(HostServerBase):
    """A running host: see `Brain.serve_host`. Stop it with `stop()` or by closing the client."""

    def __init__(self, brain: SessionsClient, tools: Mapping[str, ToolHandler] | None = None,
                 environments: Mapping[str, Any] | None = None, *, wait_secs: float = 25.0,
                 max_concurrency: int = 16) -> None:
        super().__init__(brain, tools, environments, wait_secs, max_concurrency)
        self._api = Api(brain._new_transport(max_idle=2))
        self._lock = threading.Lock()
        self._running: dict[str, HostCall] = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._poll_forever, daemon=True,
                                        name=f"brain-host-{self.host_id}")

    def start(self) -> HostServer:
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def __enter__(self) -> HostServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- stopping ---------------------------------------------------------------------------

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop taking calls; give running handlers `timeout` s, then fire their signals.

        The poll waiting on the server is released at once (a zero-wait poll from this host
        supersedes it), so no call is handed to a host that is no longer listening. Returns
        True when no handler was left running. Idempotent.
        """
        until = time.monotonic() + max(0.0, timeout)
        self._stopping.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            for _ in range(2):  # a release can overtake the poll it means to end; once more
                self._release_poll()
                self._thread.join(min(2.0, max(0.0, until - time.monotonic())) or 0.05)
                if not self._thread.is_alive():
                    break
        while self._running_calls() and time.monotonic() < until:
            time.sleep(0.02)
        left = self._running_calls()
        for call in left:
            call.signal.cancel(SERVER_STOPPED)
        self._api.transport.close()  # a poll still stuck in flight is cut off here
        self.brain._disown(self)
        return not left

    def _running_calls(self) -> list[HostCall]:
        with self._lock:
            return list(self._running.values())

    def _release_poll(self) -> None:
        try:
            self._apply_cancels(self._loop.answered(self._api.run(self._loop.release()))[1])
        except BrainClientError as exc:
            log.debug("host %s: releasing the waiting poll failed: %s", self.host_id, exc)

    # --- polling ----------------------------------------------------------------------------

    def _poll_forever(self) -> None:
        while not self._stopping.is_set():
            try:
                answer = self._api.run(self._loop.poll(len(self._running_calls())))
            except BrainClientError as exc:
                pause = self._loop.failed(exc, self._stopping.is_set())
                if pause is None:
                    return
                self._stopping.wait(pause)
                continue
            calls, cancels = self._loop.answered(answer)
            for item in calls:
                self._start_call(HostCall.from_json(item, self.brain))
            self._apply_cancels(cancels)

    def _apply_cancels(self, call_ids: list[str]) -> None:
        for call_id in call_ids:
            with self._lock:
                call = self._running.get(call_id)
            if call is not None:
                call.signal.cancel(BRAIN_CANCELLED)

    # --- running calls ----------------------------------------------------------------------

    def _start_call(self, call: HostCall) -> None:
        with self._lock:
            self._running[call.call_id] = call
        threading.Thread(target=self._serve, args=(call,), daemon=True,
                         name=f"brain-host-call-{call.call_id}").start()

    def _serve(self, call: HostCall) -> None:
        _current.call = call
        try:
            job = self._loop.job(call)
            if isinstance(job, dict):
                answer = job
            else:
                try:
                    answer = job.returned(job.function(*job.args))
                except Exception as exc:
                    answer = job.raised(exc)
            self._post_answer(call, answer)
        finally:
            _current.call = None
            with self._lock:
                self._running.pop(call.call_id, None)

    def _post_answer(self, call: HostCall, answer: dict[str, Any]) -> None:
        """Once. A lost answer is not resent: Brain records the call `unknown` (never rerun)."""
        try:
            self._api.run(answer_call(call, answer))
        except BrainClientError as exc:
            log_unposted(call.call_id, exc)
