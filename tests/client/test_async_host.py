"""`await async_brain.serve_host(...)`: host Tools and Environments served by `async def`
handlers on the test's event loop (docs/host-tools.md, "Async handlers").

The package's shared `brain serve` (tests/client/conftest.py) configures the host Tool
`hosted`, the host Environment `remote` and scripted models that call them: `hostcaller` once,
`fanout` twenty times in one model answer (a turn runs those concurrently); `slow` answers
after 20 s (cancelled long before). Each test runs its coroutine under an overall timeout and
closes every host it starts, so no host outlives its test.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from brain.client import AsyncBrain, AsyncHostServer, AsyncSession, HostCall, current_call
from tests.client.conftest import FANOUT
from tests.support.server import BrainServer

T = TypeVar("T")


def run(make: Callable[[AsyncBrain], Awaitable[T]], server: BrainServer,
        timeout: float = 60.0) -> T:
    async def main() -> T:
        async with AsyncBrain(server.url, server.token, timeout=20, turn_timeout=40,
                              stream_timeout=20) as brain:
            return await asyncio.wait_for(make(brain), timeout)
    return asyncio.run(main())


async def events_of(server: BrainServer, session: AsyncSession, kind: str) -> list[dict]:
    events = await asyncio.to_thread(server.events, session.id)
    return [e for e in events if e["kind"] == kind]


async def turn_end(server: BrainServer, session: AsyncSession, sequence: int,
                   timeout: float = 20.0) -> dict:
    """The turn_ended or turn_failed Event of the turn `sequence`, waited for."""
    async with asyncio.timeout(timeout):
        while True:
            events = await asyncio.to_thread(server.events, session.id)
            for event in events:
                if event["kind"] in ("turn_ended", "turn_failed") \
                        and event["data"]["started"] == sequence:
                    return event
            await asyncio.sleep(0.05)


def test_an_async_handler_answers_the_turn(server: BrainServer) -> None:
    seen: list[HostCall] = []

    async def lookup(call: HostCall) -> dict:
        await asyncio.sleep(0.01)
        assert current_call() is call  # the call's task knows its call, as a handler thread
        seen.append(call)
        word = call.input["word"]
        return {"content": {"meaning": word.upper()},
                "events": [{"kind": "looked_up", "data": {"word": word}}]}

    async def scenario(brain: AsyncBrain) -> None:
        async with await brain.serve_host(tools={"hosted": lookup}) as host:
            assert isinstance(host, AsyncHostServer) and host.running
            session = await brain.create_session(model="hostcaller", tools=["hosted"])
            result = await session.send("look it up")
        assert not host.running
        assert result.status == "ended" and result.output.startswith("tool results:")
        [started] = await events_of(server, session, "tool_call_started")
        [ended] = await events_of(server, session, "tool_call_ended")
        [call] = seen
        assert (call.kind, call.name, call.session_id, call.sequence, call.brain) == \
            ("tool", "hosted", session.id, started["sequence"], brain)
        assert ended["data"]["result"] == {"content": {"meaning": "HI"}, "is_error": False}
        [looked_up] = await events_of(server, session, "looked_up")
        assert looked_up["origin"] == {"kind": "tool", "sequence": started["sequence"]}

    run(scenario, server)


def test_a_plain_function_handler_runs_in_a_worker_thread(server: BrainServer) -> None:
    threads: list[int] = []

    def blocking(call: HostCall) -> str:
        threads.append(threading.get_ident())
        assert current_call() is call
        time.sleep(0.2)  # would stall the loop if it ran there
        return f"threaded {call.input['word']}"

    async def scenario(brain: AsyncBrain) -> None:
        async with await brain.serve_host(tools={"hosted": blocking}):
            session = await brain.create_session(model="hostcaller", tools=["hosted"])
            assert (await session.send("look it up")).status == "ended"
        [ended] = await events_of(server, session, "tool_call_ended")
        assert ended["data"]["result"] == {"content": "threaded hi", "is_error": False}

    run(scenario, server)
    assert len(threads) == 1 and threads[0] != threading.get_ident()


def test_twenty_calls_are_served_concurrently_from_one_loop(server: BrainServer) -> None:
    in_flight = [0]
    peak = [0]

    async def slow(call: HostCall) -> dict:
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        try:
            await asyncio.sleep(0.5)
        finally:
            in_flight[0] -= 1
        return {"content": call.input["n"]}

    async def scenario(brain: AsyncBrain) -> float:
        async with await brain.serve_host(tools={"hosted": slow}, max_concurrency=FANOUT):
            session = await brain.create_session(model="fanout", tools=["hosted"])
            began = time.monotonic()
            result = await session.send("fan out")
            took = time.monotonic() - began
        assert result.status == "ended"
        ended = await events_of(server, session, "tool_call_ended")
        assert sorted(e["data"]["result"]["content"] for e in ended) == list(range(FANOUT))
        return took

    took = run(scenario, server)
    assert took < FANOUT * 0.5 / 4, f"{FANOUT} calls of 0.5 s took {took:.2f} s"
    assert peak[0] >= FANOUT // 2, f"at most {peak[0]} calls ran at once"


def test_max_concurrency_bounds_the_calls_running_at_once(server: BrainServer) -> None:
    in_flight = [0]
    peak = [0]

    async def slow(call: HostCall) -> int:
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        try:
            await asyncio.sleep(0.3)
        finally:
            in_flight[0] -= 1
        return call.input["n"]

    async def scenario(brain: AsyncBrain) -> None:
        async with await brain.serve_host(tools={"hosted": slow}, max_concurrency=5):
            session = await brain.create_session(model="fanout", tools=["hosted"])
            assert (await session.send("fan out")).status == "ended"
        ended = await events_of(server, session, "tool_call_ended")
        assert sorted(e["data"]["result"]["content"] for e in ended) == list(range(FANOUT))

    run(scenario, server)
    assert 2 <= peak[0] <= 5, f"{peak[0]} calls ran at once"


def test_a_raising_handler_gives_an_error_result(server: BrainServer) -> None:
    async def broken(call: HostCall) -> None:
        await asyncio.sleep(0)
        raise ValueError(f"no entry for {call.input['word']}")

    async def scenario(brain: AsyncBrain) -> None:
        async with await brain.serve_host(tools={"hosted": broken}):
            session = await brain.create_session(model="hostcaller", tools=["hosted"])
            assert (await session.send("look it up")).status == "ended"
        [ended] = await events_of(server, session, "tool_call_ended")
        assert ended["data"]["result"] == {"content": "no entry for hi", "is_error": True}

    run(scenario, server)


def test_cancelling_the_turn_cancels_the_handlers_task(server: BrainServer) -> None:
    seen: list[tuple[str, bool, str | None]] = []

    async def patient(call: HostCall) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append(("CancelledError", call.signal.cancelled, call.signal.reason))
            raise
        return "never cancelled"

    async def scenario(brain: AsyncBrain) -> None:
        async with await brain.serve_host(tools={"hosted": patient}):
            session = await brain.create_session(model="hostcaller", tools=["hosted"])
            receipt = await session.submit("wait for it")
            await asyncio.wait_for(started.wait(), 20)
            assert (await session.interrupt()).sequence is not None
            turn = await turn_end(server, session, receipt.sequence)
        assert turn["kind"] == "turn_failed" and turn["data"]["error"]["code"] == "cancelled"
        [failed] = await events_of(server, session, "tool_call_failed")
        assert failed["data"]["outcome"] == "cancelled"
        assert failed["data"]["result"]["content"] == "Brain cancelled the host call"

    started = asyncio.Event()
    run(scenario, server)
    assert seen == [("CancelledError", True, "Brain cancelled the host call")]


def test_a_cancelled_handler_cancels_the_child_turn_it_awaits(server: BrainServer) -> None:
    children: list[Any] = []

    async def delegate(call: HostCall) -> str:
        child = await call.brain.session(target["child"], fetch=False)
        try:
            result = await child.send("summarise")  # no signal: the task's cancel is enough
        except asyncio.CancelledError as cancelled:
            children.append(cancelled.turn_result)  # type: ignore[attr-defined]
            raise
        return result.output

    async def scenario(brain: AsyncBrain) -> None:
        slow = await brain.create_session(model="slow")
        target["child"] = slow.id
        async with await brain.serve_host(tools={"hosted": delegate}):
            parent = await brain.create_session(model="hostcaller", tools=["hosted"])
            receipt = await parent.submit("delegate")
            async with asyncio.timeout(20):
                while (await slow.refresh()).turn is None or slow.turn.status != "running":
                    await asyncio.sleep(0.05)
            await parent.interrupt()
            turn = await turn_end(server, parent, receipt.sequence)
        assert turn["data"]["error"]["code"] == "cancelled"
        [failed] = await events_of(server, parent, "tool_call_failed")
        assert failed["data"]["outcome"] == "cancelled"
        [child] = children
        assert (child.status, child.error.code) == ("failed", "cancelled")
        assert child.cancel_request is not None  # the SDK cancelled the child's turn
        assert (await slow.refresh()).turn.status == "failed"

    target: dict[str, str] = {}
    run(scenario, server)


def test_a_threaded_handler_sees_only_its_signal(server: BrainServer) -> None:
    reasons: list[str | None] = []

    def patient(call: HostCall) -> str:
        running.set()
        if call.signal.wait(20):
            reasons.append(call.signal.reason)
            raise RuntimeError("stopped: Brain cancelled the call")
        return "never cancelled"

    async def scenario(brain: AsyncBrain) -> None:
        async with await brain.serve_host(tools={"hosted": patient}):
            session = await brain.create_session(model="hostcaller", tools=["hosted"])
            receipt = await session.submit("wait for it")
            assert await asyncio.to_thread(running.wait, 20)
            await session.interrupt()
            await turn_end(server, session, receipt.sequence)
        [failed] = await events_of(server, session, "tool_call_failed")
        assert failed["data"]["outcome"] == "cancelled"
        assert failed["data"]["result"]["content"] == "stopped: Brain cancelled the call"

    running = threading.Event()
    run(scenario, server)
    assert reasons == ["Brain cancelled the host call"]


def test_aclose_returns_promptly_with_a_call_running(server: BrainServer) -> None:
    seen: list[str | None] = []

    async def stubborn(call: HostCall) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append(call.signal.reason)
            raise
        return "too late to answer"

    async def scenario(brain: AsyncBrain) -> None:
        host = await brain.serve_host(tools={"hosted": stubborn})
        session = await brain.create_session(model="hostcaller", tools=["hosted"])
        receipt = await session.submit("wait for it")
        await asyncio.wait_for(started.wait(), 20)
        began = time.monotonic()
        assert await host.aclose(timeout=0.5) is False  # a handler was still running
        assert time.monotonic() - began < 3.0
        assert not host.running and seen == ["the host server stopped"]
        # The call was delivered and no answer was posted: a cancel leaves it unknown.
        await session.interrupt()
        turn = await turn_end(server, session, receipt.sequence)
        assert turn["data"]["error"]["code"] == "cancelled"
        [failed] = await events_of(server, session, "tool_call_failed")
        assert failed["data"]["outcome"] == "unknown"

    started = asyncio.Event()
    run(scenario, server)


def test_closing_the_client_stops_its_hosts_and_bad_hosts_are_refused(server: BrainServer) -> None:
    async def scenario(brain: AsyncBrain) -> None:
        owner = brain.with_token(server.token)
        host = await owner.serve_host(tools={"hosted": lambda call: "unused"})
        await asyncio.sleep(0.3)  # its long poll is waiting on the server now
        began = time.monotonic()
        await owner.aclose()
        assert time.monotonic() - began < 1.5 and not host.running
        refused = await brain.serve_host(tools={"echo": lambda call: None})
        async with asyncio.timeout(10):
            while refused.running:
                await asyncio.sleep(0.05)
        assert refused.error is not None and refused.error.code == "invalid_request"
        assert await refused.aclose()
        with pytest.raises(ValueError):
            await brain.serve_host()
        with pytest.raises(TypeError):
            await brain.serve_host(tools={"hosted": "not a function"})

    run(scenario, server)


class Remote:
    """A host Environment whose ops are coroutines (exec also awaits, as real I/O would)."""

    def __init__(self) -> None:
        self.ops: list[Any] = []

    async def setup(self) -> dict:
        self.ops.append("setup")
        return {"ready": True}

    async def exec(self, request: dict) -> dict:
        await asyncio.sleep(0.01)
        self.ops.append(("exec", request["argv"]))
        return {"exit_code": 0, "stdout": "Hosted\n", "stderr": "", "truncated": False}

    async def detach(self) -> None:
        self.ops.append("detach")

    def teardown(self) -> dict:  # a plain method: runs in a worker thread
        self.ops.append("teardown")
        return {"removed": True}


def test_an_async_host_environment_lives_with_its_session(server: BrainServer) -> None:
    remote = Remote()

    async def scenario(brain: AsyncBrain) -> None:
        async with await brain.serve_host(environments={"remote": remote}):
            session = await brain.create_session(model="shellcaller", tools=["remote_shell"],
                                                 environments=["remote"])
            assert session.status == "idle"
            result = await session.send("run it")
            assert result.status == "ended" and "Hosted" in result.output
            assert (await session.end()).status == "ended"
            await session.delete()

    run(scenario, server)
    assert remote.ops == ["setup", ("exec", ["uname"]), "detach", "teardown"]
