"""`session.fork(at_sequence=...)` in the sync and asyncio clients, against the package's real
server (tests/client/conftest.py)."""

from __future__ import annotations

import asyncio

import pytest

from brain.client import AsyncBrain, Brain, ForkInsideTurn, NotFound, SequenceBeyondEnd
from tests.support.server import BrainServer


def texts(messages: list) -> list[str]:
    return [block["text"] for m in messages for block in m["content"] if block["type"] == "text"]


def test_fork_returns_the_child_as_the_parent_stood(brain: Brain) -> None:
    parent = brain.create_session(metadata={"branch": "main"})
    parent.send("first")
    after_first = parent.refresh().last_sequence
    parent.send("second")

    child = parent.fork(at_sequence=after_first, idempotency_key="sdk-fork-1")
    assert child.id != parent.id and child.status == "idle"
    assert child.metadata == {"branch": "main"}
    assert texts(child.transcript().messages) == ["first", "echo: first"]
    assert child.send("other").output == "echo: other"
    assert texts(child.transcript().messages)[-2:] == ["other", "echo: other"]
    first_event = next(iter(child.events()))
    assert (first_event.kind, first_event.data) == (
        "forked_from", {"session_id": parent.id, "sequence": after_first})
    assert parent.fork(at_sequence=after_first, idempotency_key="sdk-fork-1").id == child.id
    assert texts(parent.transcript().messages) == [
        "first", "echo: first", "second", "echo: second"]


def test_fork_refusals_raise_their_own_errors(brain: Brain) -> None:
    parent = brain.create_session()
    turn = parent.send("one")
    with pytest.raises(ForkInsideTurn):
        parent.fork(at_sequence=turn.sequence)
    with pytest.raises(SequenceBeyondEnd):
        parent.fork(at_sequence=parent.refresh().last_sequence + 1)
    with pytest.raises(NotFound):
        brain.session("0" * 32, fetch=False).fork(at_sequence=1)


def test_the_async_client_forks_too(server: BrainServer) -> None:
    async def scenario() -> None:
        async with AsyncBrain(server.url, server.token, timeout=20, turn_timeout=40) as brain:
            parent = await brain.create_session()
            await parent.send("kept")
            at = (await parent.refresh()).last_sequence
            await parent.send("dropped")
            child = await parent.fork(at_sequence=at)
            assert texts((await child.transcript()).messages) == ["kept", "echo: kept"]
            assert (await child.send("new")).output == "echo: new"
            with pytest.raises(SequenceBeyondEnd):
                await child.fork(at_sequence=10_000)
    asyncio.run(asyncio.wait_for(scenario(), 60))
