"""Every decision of a host server, once, for the threaded and the asyncio one.

`HostServer` (brain/client/host.py) polls from a thread and runs handlers in threads;
`AsyncHostServer` (async_host.py) polls from a task and runs handlers as tasks. Both ask this
module what to do and only carry it out, as the admission watch (admission_watch.py) does for a
cancelled send: what the next poll asks for and how long it may wait, what a failed poll means
(stop for good, or retry after a doubling back-off), what an answer hands over, which handler a
call runs with which arguments, and what the host answers for each way the handler can end.
`HostServerBase` is what both servers hold alike. Nothing here does I/O, so the rules are tested
without threads, tasks or a server (tests/client/test_routes.py).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from brain.client import routes
from brain.client.errors import (
    BrainAPIError,
    BrainClientError,
    ClientClosed,
    Forbidden,
    InvalidRequest,
    Unauthorized,
)
from brain.client.host_answers import (
    REQUEST_OPS,
    environment_method,
    message_of,
    missing_op_answer,
    missing_tool_answer,
    op_failure_answer,
    op_result_answer,
    postable,
    served_handlers,
    tool_failure_answer,
    tool_value_answer,
)
from brain.client.routes import Call

log = logging.getLogger("brain.client")

POLL_MARGIN_SECS = 15.0  # the server answers a poll by wait_secs (+5 s); never cut it short
BUSY_WAIT_SECS = 1.0  # with every slot busy, poll this often for cancel notices only
FIRST_BACKOFF_SECS = 0.5
MAX_BACKOFF_SECS = 5.0
ANSWER_TIMEOUT_SECS = 30.0
RELEASE_TIMEOUT_SECS = 5.0
BRAIN_CANCELLED = "Brain cancelled the host call"
SERVER_STOPPED = "the host server stopped"
REFUSALS = (InvalidRequest, Unauthorized, Forbidden)  # asking again gets the same answer


class HostLoop:
    """A host server's poll loop as state: what it serves, its back-off and Brain's refusal."""

    def __init__(self, host_id: str, tools: Mapping[str, Any] | None,
                 environments: Mapping[str, Any] | None, wait_secs: float,
                 max_concurrency: int) -> None:
        self.tools, self.environments = served_handlers(tools, environments, wait_secs,
                                                        max_concurrency)
        self.host_id = host_id
        self.wait_secs = wait_secs
        self.max_concurrency = max_concurrency
        self.backoff = FIRST_BACKOFF_SECS
        self.error: BrainAPIError | None = None  # set when Brain refused to serve this host

    def _body(self, max_calls: int, wait_secs: float) -> dict[str, Any]:
        return {"tools": sorted(self.tools), "environments": sorted(self.environments),
                "wait_secs": wait_secs, "max_calls": max_calls, "host_id": self.host_id}

    def poll(self, running: int) -> Call[dict[str, Any]]:
        """The next long poll: as many calls as free slots; with none free, a short poll that
        only brings cancel notices."""
        free = max(0, self.max_concurrency - running)
        wait = self.wait_secs if free > 0 else min(self.wait_secs, BUSY_WAIT_SECS)
        return routes.host_poll(self._body(free, wait), wait + POLL_MARGIN_SECS)

    def release(self) -> Call[dict[str, Any]]:
        """A zero-wait poll asking for nothing: it supersedes (releases) the poll waiting on
        the server, so no call is handed to a host that stops listening."""
        return routes.host_poll(self._body(0, 0), RELEASE_TIMEOUT_SECS)

    def failed(self, exc: BrainClientError, stopping: bool) -> float | None:
        """A poll failed: the seconds to wait before polling again, or None to stop for good
        (the client closed, Brain refuses this host, or the server is stopping anyway)."""
        if isinstance(exc, ClientClosed):
            return None
        if isinstance(exc, REFUSALS):
            self.error = exc
            log.error("host %s: Brain refuses to serve it: %s", self.host_id, exc)
            return None
        if stopping:
            return None
        pause, self.backoff = self.backoff, min(MAX_BACKOFF_SECS, self.backoff * 2)
        log.warning("host %s: poll failed (retrying in %.1f s): %s", self.host_id, pause, exc)
        return pause

    def answered(self, answer: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
        """A poll's answer: the calls to start (handed to this host alone: run them even when
        stopping) and the ids of running calls Brain cancels."""
        self.backoff = FIRST_BACKOFF_SECS
        return list(answer.get("calls") or []), list(answer.get("cancel") or [])

    def job(self, call: Any) -> Job | dict[str, Any]:
        """What serving `call` runs, or its answer at once when this host has no handler."""
        if call.kind == "tool":
            handler = self.tools.get(call.name)
            if handler is None:
                return missing_tool_answer(call.name)
            return Job(call, handler, (call,))
        method = environment_method(self.environments.get(call.name), call.op)
        if method is None:
            return missing_op_answer(call.name, call.op)
        return Job(call, method, (call.request or {},) if call.op in REQUEST_OPS else ())


class HostServerBase:
    """What both host servers hold alike: the client that serves, what it serves, the loop."""

    def __init__(self, brain: Any, tools: Mapping[str, Any] | None,
                 environments: Mapping[str, Any] | None, wait_secs: float,
                 max_concurrency: int) -> None:
        self.host_id = f"py-{secrets.token_hex(8)}"
        self._loop = HostLoop(self.host_id, tools, environments, wait_secs, max_concurrency)
        self.tools, self.environments = self._loop.tools, self._loop.environments
        self.brain = brain
        self.wait_secs = wait_secs
        self.max_concurrency = max_concurrency

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.host_id} tools={sorted(self.tools)} " \
               f"environments={sorted(self.environments)}>"

    @property
    def error(self) -> BrainAPIError | None:
        """Brain's refusal to serve this host (a name that is not a configured host part)."""
        return self._loop.error


@dataclass(frozen=True)
class Job:
    """A handler to run for one call, and how each of its endings becomes the host's answer."""

    call: Any  # a HostCall
    function: Callable[..., Any]
    args: tuple[Any, ...]

    def returned(self, value: Any) -> dict[str, Any]:
        if self.call.kind == "tool":
            return tool_value_answer(value)
        return op_result_answer(self.call.op, value)

    def raised(self, exc: BaseException) -> dict[str, Any]:
        """The handler raised: an error answer, `cancelled` once the call's signal fired."""
        call = self.call
        what = call.name if call.kind == "tool" else f"{call.name}.{call.op}"
        log.info("host %s %s (%s) raised %r", call.kind, what, call.call_id, exc)
        return cancelled_answer(call, message_of(exc))


def cancelled_answer(call: Any, message: str) -> dict[str, Any]:
    """An error answer for `call`, with outcome `cancelled` only when Brain asked (its signal)."""
    by_brain = call.signal.cancelled
    if call.kind == "tool":
        return tool_failure_answer(message, by_brain)
    return op_failure_answer(message, by_brain)


def answer_call(call: Any, answer: dict[str, Any]) -> Call[dict[str, Any]]:
    """The one POST of a call's answer (never resent: Brain records a lost one `unknown`)."""
    return routes.host_answer(call.call_id, postable(call.kind, answer), ANSWER_TIMEOUT_SECS)
