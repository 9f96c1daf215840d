"""The asyncio client `AsyncBrain` against the package's real server (tests/client/conftest.py).

Each test runs its coroutine with `asyncio.run` under an overall timeout, so a hang fails the
test instead of stalling the suite.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from brain.client import (
    AsyncBrain,
    AsyncEventStream,
    Brain,
    Cancelled,
    CancelSignal,
    ClientClosed,
    Event,
    ModelDelta,
    NotFound,
    Receipt,
    TransportError,
)
from tests.client.test_cancel_signal import assert_cancelled_after_admission, kinds
from tests.support.server import BrainServer, free_port

T = TypeVar("T")


def run(make: Callable[[AsyncBrain], Awaitable[T]], server: BrainServer,
        timeout: float = 60.0) -> T:
    async def main() -> T:
        async with AsyncBrain(server.url, server.token, timeout=20, turn_timeout=40,
                              stream_timeout=20) as brain:
            return await asyncio.wait_for(make(brain), timeout)
    return asyncio.run(main())


async def wait_for_kind(server: BrainServer, session_id: str, kind: str,
                        timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while kind not in await asyncio.to_thread(kinds, server, session_id):
            await asyncio.sleep(0.05)


async def collect(stream: AsyncEventStream, until: str, timeout: float = 20.0,
                  stop: Callable[[Any], bool] = lambda item: False) -> list[Any]:
    seen: list[Any] = []
    async with asyncio.timeout(timeout):
        async for item in stream:
            seen.append(item)
            if getattr(item, "kind", None) == until or stop(item):
                break
    return seen


def test_the_same_calls_as_the_sync_client(server: BrainServer) -> None:
    async def scenario(brain: AsyncBrain) -> None:
        session = await brain.create_session(metadata={"user": "ada"},
                                             idempotency_key="async-create-1")
        assert session.status == "idle" and session.metadata == {"user": "ada"}
        again = await brain.create_session(metadata={"user": "ada"},
                                           idempotency_key="async-create-1")
        assert again.id == session.id  # the key replays the creation

        result = await session.send("hello")
        assert (result.status, result.output) == ("ended", "echo: hello")
        transcript = await session.transcript()
        assert transcript.messages[-1]["content"] and transcript.through_sequence > 0

        receipt = await session.submit("later", idempotency_key="async-submit-1")
        assert receipt == Receipt(session.id, receipt.sequence)
        assert await session.submit("later", idempotency_key="async-submit-1") == receipt
        await wait_for_kind(server, session.id, "turn_ended")
        async with asyncio.timeout(15):
            while (await session.refresh()).turn.sequence != receipt.sequence \
                    or session.turn.status == "running":
                await asyncio.sleep(0.05)

        events = [e async for e in session.events(page_size=2)]
        assert [e.raw for e in events] == server.events(session.id)
        page = await session.events_page(0, limit=1)
        assert page.has_more and page.events == events[:1]

        assert (await session.interrupt()).sequence is None  # idle: nothing to cancel
        fetched = await brain.session(session.id)
        assert fetched.last_sequence == events[-1].sequence
        listed = [s.id async for s in brain.sessions(limit=1)]
        assert session.id in listed

        token = await session.create_token()
        scoped = brain.with_token(token)
        try:
            assert (await scoped.session(session.id)).id == session.id
        finally:
            await scoped.aclose()

        await session.end()
        assert session.status == "ended"
        await session.delete()
        with pytest.raises(NotFound):
            await brain.session(session.id)

    run(scenario, server)


def test_two_hundred_sessions_from_one_event_loop(server: BrainServer) -> None:
    async def one(brain: AsyncBrain, n: int) -> str:
        session = await brain.create_session()
        result = await session.send(f"hi {n}")
        assert (result.status, result.output) == ("ended", f"echo: hi {n}")
        return session.id

    async def scenario(brain: AsyncBrain) -> list[str]:
        return await asyncio.gather(*(one(brain, n) for n in range(200)))

    started = time.monotonic()
    ids = run(scenario, server, timeout=120)
    assert len(set(ids)) == 200
    assert time.monotonic() - started < 120


def test_follow_resumes_a_dropped_stream_with_last_event_id(server: BrainServer) -> None:
    async def scenario(brain: AsyncBrain) -> None:
        session = await brain.create_session(model="stream")
        async with await session.follow(0, deltas=True) as stream:
            receipt = await session.submit("keep going")
            before = await collect(stream, "turn_ended",
                                   stop=lambda item: isinstance(item, ModelDelta))
            assert isinstance(before[-1], ModelDelta)
            # Cut the connection under the stream, mid model call, as a network failure would.
            network = stream._response.extensions["network_stream"]  # type: ignore[union-attr]
            network.get_extra_info("socket").shutdown(socket.SHUT_RDWR)
            after = await collect(stream, "turn_ended")
        assert stream.reconnects == 1
        events = [e for e in before + after if isinstance(e, Event)]
        committed = await asyncio.to_thread(server.events, session.id)
        # Nothing lost, nothing repeated: exactly the journal's public records, in order.
        assert [e.raw for e in events] == [e for e in committed
                                           if e["sequence"] <= events[-1].sequence]
        assert events[-1].kind == "turn_ended"
        assert events[-1].data["started"] == receipt.sequence
        assert stream.cursor == events[-1].sequence

    run(scenario, server)


def test_follow_ends_after_session_ended(server: BrainServer) -> None:
    async def scenario(brain: AsyncBrain) -> None:
        session = await brain.create_session()
        await session.send("hi")
        await session.end()
        stream = await session.follow(0)
        async with asyncio.timeout(20):
            seen = [e async for e in stream]  # the stream must end by itself
        assert seen[-1].kind == "session_ended"
        assert seen == [e async for e in session.events()]

    run(scenario, server)


def test_a_cancelled_task_cancels_its_turn_after_admission(server: BrainServer) -> None:
    async def scenario(brain: AsyncBrain) -> None:
        session = await brain.create_session(model="slow")  # answers after 20 s
        task = asyncio.create_task(session.send("take your time"))
        await wait_for_kind(server, session.id, "model_call_started")
        started = time.monotonic()
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=15)
        assert done and task.cancelled() and time.monotonic() - started < 10
        try:
            task.result()
        except asyncio.CancelledError as cancel:
            result = cancel.turn_result  # type: ignore[attr-defined]
        # The cancel was issued and answered before the task ended: the journal shows it.
        await asyncio.to_thread(assert_cancelled_after_admission, server, result)
        assert (await session.refresh()).status == "idle"  # the session stays usable

    run(scenario, server)


def test_a_timeout_around_send_cancels_the_turn(server: BrainServer) -> None:
    async def scenario(brain: AsyncBrain) -> None:
        session = await brain.create_session(model="slow")
        with pytest.raises(TimeoutError):  # asyncio.timeout keeps its meaning
            async with asyncio.timeout(1.5):
                await session.send("too slow")
        assert "cancel_requested" in await asyncio.to_thread(kinds, server, session.id)
        assert (await session.refresh()).turn.error.code == "cancelled"

    run(scenario, server)


def test_a_signal_cancels_and_send_returns_the_result(server: BrainServer) -> None:
    async def scenario(brain: AsyncBrain) -> None:
        session = await brain.create_session(model="slow")
        signal = CancelSignal()

        async def fire() -> None:
            await wait_for_kind(server, session.id, "model_call_started")
            await asyncio.to_thread(signal.cancel, "owner cancelled")  # from another thread

        firing = asyncio.create_task(fire())
        result = await session.send("take your time", signal=signal)
        await firing
        await asyncio.to_thread(assert_cancelled_after_admission, server, result)

        fired = CancelSignal()
        fired.cancel()
        with pytest.raises(Cancelled):
            await session.send("never sent", signal=fired)

    run(scenario, server)


def test_a_refused_connection_was_not_sent(server: BrainServer) -> None:
    async def scenario() -> None:
        async with AsyncBrain(f"http://127.0.0.1:{free_port()}", "t", connect_timeout=2,
                              timeout=5) as brain:
            with pytest.raises(TransportError) as refused:
                await brain.create_session(idempotency_key="async-refused-1")
        assert refused.value.maybe_applied is False
        assert refused.value.idempotency_key == "async-refused-1"

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_sync_and_async_clients_see_the_same_session(server: BrainServer, brain: Brain) -> None:
    session = brain.create_session()
    session.send("from sync")

    async def scenario(client: AsyncBrain) -> None:
        handle = await client.session(session.id)
        assert handle.last_sequence == session.refresh().last_sequence
        assert [e async for e in handle.events()] == list(session.events())

    run(scenario, server)


def test_aclose_wakes_a_send_in_flight_and_sends_nothing(server: BrainServer) -> None:
    async def scenario(brain: AsyncBrain) -> None:
        session = await brain.create_session(model="slow")
        task = asyncio.create_task(session.send("waiting"))
        await wait_for_kind(server, session.id, "model_call_started")
        await brain.aclose()
        done, _ = await asyncio.wait({task}, timeout=10)
        assert done and isinstance(task.exception(), ClientClosed)
        with pytest.raises(ClientClosed):
            await session.refresh()
        # Closing sent nothing: the turn keeps running on the server.
        assert "cancel_requested" not in await asyncio.to_thread(kinds, server, session.id)
        await asyncio.to_thread(server.request, "POST", f"/v1/sessions/{session.id}/cancel")

    run(scenario, server)
