"""The same scenarios through the sync `Brain` and the asyncio `AsyncBrain`, on the package's
real server (tests/client/conftest.py).

Both clients run the same request descriptions (brain/client/routes.py); these scenarios check
that they also answer alike: each is written once against a `Shell`, which carries a call out
directly on the sync client, or on an event loop of its own (in a thread, under a timeout) on
the asyncio one. A scenario never asks which shell it runs on.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import AsyncIterable, Iterable, Iterator
from typing import Any

import pytest

from brain.client import (
    AsyncBrain,
    Brain,
    CancelSignal,
    ClientClosed,
    HostCall,
    IdempotencyConflict,
    InvalidRequest,
    ModelDelta,
    NotFound,
    SessionEnded,
    TurnResult,
    Unauthorized,
)
from tests.client.test_cancel_signal import assert_cancelled_after_admission, kinds
from tests.support.server import BrainServer
from tests.support.waiting import wait_for

CALL_TIMEOUT_SECS = 60.0
OPTIONS = {"timeout": 20, "turn_timeout": 40, "stream_timeout": 20}


class Shell:
    """One client and the way to carry out its calls; `shell(x)` is x's value for either."""

    def __init__(self, kind: str, server: BrainServer) -> None:
        self.kind = kind
        self.loop: asyncio.AbstractEventLoop | None = None
        if kind == "sync":
            self.brain: Any = Brain(server.url, server.token, **OPTIONS)
            return
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                       name="shell-loop")
        self.thread.start()
        self.brain = self(_make_async(server.url, server.token))

    def __call__(self, value: Any) -> Any:
        """`value` itself on the sync shell; awaited on the loop on the asyncio one."""
        if not inspect.isawaitable(value):
            return value
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(_awaited(value), self.loop).result(
            CALL_TIMEOUT_SECS)

    def items(self, iterable: Any, *, until: str | None = None,
              stop: Any = lambda item: False) -> list[Any]:
        """An iterator's items (sync or async) up to an Event of kind `until`, or the end."""
        if self.loop is None:
            return _take(iterable, until, stop)
        return self(_take_async(iterable, until, stop))

    def stop(self, host: Any) -> bool:
        return host.stop() if self.loop is None else self(host.aclose())

    def close(self, brain: Any = None) -> None:
        brain = brain or self.brain
        self(brain.close() if self.loop is None else brain.aclose())

    def shutdown(self) -> None:
        self.close()
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


async def _make_async(url: str, token: str) -> AsyncBrain:
    return AsyncBrain(url, token, **OPTIONS)


async def _awaited(value: Any) -> Any:
    return await value


def _take(iterable: Iterable[Any], until: str | None, stop: Any) -> list[Any]:
    seen = []
    for item in iterable:
        seen.append(item)
        if (until is not None and getattr(item, "kind", None) == until) or stop(item):
            break
    return seen


async def _take_async(iterable: AsyncIterable[Any], until: str | None, stop: Any) -> list[Any]:
    seen = []
    async with asyncio.timeout(30):
        async for item in iterable:
            seen.append(item)
            if (until is not None and getattr(item, "kind", None) == until) or stop(item):
                break
    return seen


@pytest.fixture(params=["sync", "async"])
def shell(request: pytest.FixtureRequest, server: BrainServer) -> Iterator[Shell]:
    made = Shell(request.param, server)
    try:
        yield made
    finally:
        made.shutdown()


def test_a_session_from_creation_to_deletion(shell: Shell, server: BrainServer) -> None:
    brain = shell.brain
    session = shell(brain.create_session(metadata={"user": "ada"}, idempotency_key=None))
    assert session.status == "idle" and session.metadata == {"user": "ada"}
    result = shell(session.send("hello"))
    assert isinstance(result, TurnResult) and (result.status, result.output) == \
        ("ended", "echo: hello")
    transcript = shell(session.transcript())
    assert transcript.messages[-1]["content"] and transcript.through_sequence > 0
    assert session.status == "idle" and session.last_sequence == 1  # cached, not live
    assert shell(session.refresh()).last_sequence == transcript.through_sequence

    events = shell.items(session.events(page_size=2))
    assert [e.raw for e in events] == server.events(session.id)
    page = shell(session.events_page(0, limit=1))
    assert page.has_more and page.events == events[:1]
    assert shell(session.interrupt()).sequence is None  # idle: nothing to cancel
    assert session.id in [s.id for s in shell.items(brain.sessions(limit=1))]
    assert shell(brain.session(session.id)).last_sequence == events[-1].sequence

    shell(session.end())
    assert session.status == "ended"
    with pytest.raises(SessionEnded):
        shell(session.send("too late"))
    shell(session.delete())
    with pytest.raises(NotFound):
        shell(brain.session(session.id))


def test_keys_replay_and_refuse_alike(shell: Shell) -> None:
    brain, key = shell.brain, f"both-{shell.kind}-{time.monotonic_ns()}"
    first = shell(brain.create_session(metadata={"n": 1}, idempotency_key=key))
    assert shell(brain.create_session(metadata={"n": 1}, idempotency_key=key)).id == first.id
    with pytest.raises(IdempotencyConflict):
        shell(brain.create_session(metadata={"n": 2}, idempotency_key=key))
    receipt = shell(first.submit("later", idempotency_key=key + "-submit"))
    assert shell(first.submit("later", idempotency_key=key + "-submit")) == receipt


def test_create_takes_only_the_bodys_fields(shell: Shell) -> None:
    with pytest.raises(TypeError, match="modle"):
        shell(shell.brain.create_session(modle="scripted"))  # fails before anything is sent
    session = shell(shell.brain.create_session(model="scripted", idle_ttl_ms=None))
    assert session.config["model"]["name"] == "scripted"


def test_lower_limits_for_a_session_and_for_one_turn(shell: Shell) -> None:
    session = shell(shell.brain.create_session(limits={"max_model_calls": 3}))
    assert session.config["limits"]["max_model_calls"] == 3
    assert shell(session.send("within", limits={"max_turn_secs": 30})).status == "ended"
    with pytest.raises(InvalidRequest, match="max_model_calls"):  # above the session's own
        shell(session.send("too many", limits={"max_model_calls": 4}))
    receipt = shell(session.submit("also within", limits={"max_model_calls": 2}))
    assert receipt.sequence > 0


def test_tokens_forks_and_closing(shell: Shell) -> None:
    session = shell(shell.brain.create_session())
    shell(session.send("one"))
    shell(session.send("two"))
    first_turn_end = [e for e in shell.items(session.events())
                      if e.kind == "turn_ended"][0].sequence
    fork = shell(session.fork(first_turn_end))
    assert fork.id != session.id
    assert len(shell(fork.transcript()).messages) == 2  # "one" and its answer

    scoped = shell.brain.with_token(shell(session.create_token()))
    try:
        assert shell(scoped.session(session.id)).id == session.id
        with pytest.raises(NotFound):  # a session token sees its own session only
            shell(scoped.session(fork.id))
    finally:
        shell.close(scoped)
    stranger = shell.brain.with_token("not-a-token")
    with pytest.raises(Unauthorized):
        shell(stranger.session(session.id))
    shell.close(stranger)
    shell.close()
    with pytest.raises(ClientClosed):
        shell(session.refresh())
    with pytest.raises(ClientClosed):
        shell(shell.brain.create_session())


def test_follow_delivers_deltas_then_the_turn(shell: Shell, server: BrainServer) -> None:
    session = shell(shell.brain.create_session(model="stream"))
    stream = shell(session.follow(0, deltas=True))
    try:
        receipt = shell(session.submit("go"))
        seen = shell.items(stream, until="turn_ended")
    finally:
        shell(stream.close() if shell.loop is None else stream.aclose())
    deltas = [item.delta for item in seen if isinstance(item, ModelDelta)]
    assert "".join(deltas).split() == ["one", "two", "three", "four"]
    events = [item for item in seen if not isinstance(item, ModelDelta)]
    assert [e.raw for e in events] == server.events(session.id)[:len(events)]
    assert events[-1].kind == "turn_ended" and events[-1].data["started"] == receipt.sequence
    assert stream.cursor == events[-1].sequence


def test_a_signal_cancels_after_admission(shell: Shell, server: BrainServer) -> None:
    session = shell(shell.brain.create_session(model="slow"))
    signal = CancelSignal()
    threading.Thread(target=lambda: (
        wait_for(lambda: "model_call_started" in kinds(server, session.id), timeout=15,
                 what="model call"), signal.cancel("owner cancelled")), daemon=True).start()
    started = time.monotonic()
    result = shell(session.send("take your time", signal=signal))
    assert time.monotonic() - started < 15
    assert_cancelled_after_admission(server, result)


def test_a_host_tool_answers_the_turn(shell: Shell) -> None:
    seen: list[HostCall] = []

    def lookup(call: HostCall) -> dict[str, Any]:  # a plain function serves on both
        seen.append(call)
        return {"content": {"meaning": call.input["word"].upper()}}

    host = shell(shell.brain.serve_host(tools={"hosted": lookup}, wait_secs=2))
    try:
        session = shell(shell.brain.create_session(model="hostcaller", tools=["hosted"]))
        result = shell(session.send("look it up"))
    finally:
        assert shell.stop(host)
    assert result.status == "ended"
    [call] = seen
    assert (call.kind, call.name, call.session_id) == ("tool", "hosted", session.id)
    assert call.brain is shell.brain
    assert host.error is None and not host.running


class Remote:
    """A host Environment whose ops are plain methods: served alike by both host servers."""

    def __init__(self) -> None:
        self.ops: list[Any] = []

    def setup(self) -> dict[str, Any]:
        self.ops.append("setup")
        return {"ready": True}

    def exec(self, request: dict[str, Any]) -> dict[str, Any]:
        self.ops.append(("exec", request["argv"]))
        return {"exit_code": 0, "stdout": "Hosted\n", "stderr": "", "truncated": False}

    def detach(self) -> None:
        self.ops.append("detach")

    def teardown(self) -> dict[str, Any]:
        self.ops.append("teardown")
        return {"removed": True}


def test_a_host_environment_lives_with_its_session(shell: Shell) -> None:
    remote = Remote()
    host = shell(shell.brain.serve_host(environments={"remote": remote}, wait_secs=2))
    try:
        session = shell(shell.brain.create_session(model="shellcaller", tools=["remote_shell"],
                                                   environments=["remote"]))
        result = shell(session.send("run it"))
        assert result.status == "ended" and "Hosted" in result.output
        assert shell(session.end()).status == "ended"
        shell(session.delete())
    finally:
        assert shell.stop(host)
    assert remote.ops == ["setup", ("exec", ["uname"]), "detach", "teardown"]


def test_interrupting_a_submitted_turn(shell: Shell, server: BrainServer) -> None:
    session = shell(shell.brain.create_session(model="slow"))
    receipt = shell(session.submit("take your time"))
    wait_for(lambda: "model_call_started" in kinds(server, session.id), timeout=15,
             what="model call")
    answer = shell(session.interrupt(idempotency_key=f"stop-{session.id}"))
    assert answer.requested and answer.session_id == session.id
    stream = shell(session.follow(receipt.sequence - 1))
    try:
        seen = shell.items(stream, until="turn_failed")
    finally:
        shell(stream.close() if shell.loop is None else stream.aclose())
    assert seen[-1].data["error"]["code"] == "cancelled"
    assert shell(session.refresh()).status == "idle"


def test_a_stream_ends_after_session_ended_and_a_wrong_id_fails_at_once(shell: Shell) -> None:
    session = shell(shell.brain.create_session())
    shell(session.send("hi"))
    shell(session.end())
    seen = shell.items(shell(session.follow(0)))  # ends by itself
    assert seen[-1].kind == "session_ended" and seen[0].sequence == 1
    with pytest.raises(NotFound):
        shell(shell(shell.brain.session("0" * 32, fetch=False)).follow(0))
