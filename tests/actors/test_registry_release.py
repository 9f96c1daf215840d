"""The release protocol between the Registry and its session actors
(brain/actors/registry/actor.py).

A session actor drops its session when idle and says `Released(session_id, handled)`. The
registry takes the actor back only if it forwarded no more commands than that; a command that
crossed the release keeps the slot, so the session opens again in the same actor and there is
never more than one actor per session. A `Released` from any other actor changes nothing.

The real Registry runs in-process on Thespian's simpleSystemBase. Its session actors are
stand-ins that answer each command with their own address and send `Released` when the test
says so: the test chooses the counts, which is exactly the race a real actor cannot be made to
lose on demand. The pool is filled once and not refilled, so which idle actor is handed out
next is known (the one returned last).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from thespian.actors import ActorSystem, ActorTypeDispatcher

from brain.protocol.messages import (
    CancelTurn,
    Delivered,
    FillPool,
    Released,
    ToSession,
    Warmed,
    WarmUp,
)
from tests.support.registry_harness import FixedPoolRegistry, in_process_actors

ASK_SECS = 5


@dataclass(frozen=True)
class SendReleased:
    """Test → stand-in: send `Released(session_id, handled)` to the registry, from yourself."""

    registry: Any
    session_id: str
    handled: int


@dataclass(frozen=True)
class Served:
    """Stand-in → the asker: who served the command."""

    actor: Any
    request_id: str


class StandInSessionActor(ActorTypeDispatcher):
    def receiveMsg_WarmUp(self, msg: WarmUp, sender: Any) -> None:
        self.send(sender, Warmed())

    def receiveMsg_Delivered(self, msg: Delivered, sender: Any) -> None:
        self.send(msg.reply_to, Served(self.myAddress, msg.request_id))

    def receiveMsg_SendReleased(self, msg: SendReleased, sender: Any) -> None:
        self.send(msg.registry, Released(msg.session_id, msg.handled))
        self.send(sender, "sent")


class StandInRegistry(FixedPoolRegistry):
    stand_in = StandInSessionActor


@pytest.fixture
def system(tmp_path, monkeypatch) -> Iterator[ActorSystem]:
    with in_process_actors(tmp_path, monkeypatch, BRAIN_SESSION_POOL_SIZE="3",
                           BRAIN_SESSION_ACTOR_SESSIONS="0") as actors:
        yield actors


class Driver:
    def __init__(self, actors: ActorSystem) -> None:
        self.actors = actors
        self.registry = actors.createActor(StandInRegistry)
        assert actors.ask(self.registry, FillPool(), ASK_SECS) == "filled"
        self.count = 0

    def command(self, session_id: str) -> Any:
        """Send one command for the session; the address of the actor that served it."""
        self.count += 1
        request_id = f"r{self.count}"
        answer = self.actors.ask(self.registry, ToSession(request_id, session_id, CancelTurn()),
                                 ASK_SECS)
        assert isinstance(answer, Served) and answer.request_id == request_id, answer
        return answer.actor

    def release(self, actor: Any, session_id: str, handled: int) -> None:
        sent = self.actors.ask(actor, SendReleased(self.registry, session_id, handled), ASK_SECS)
        assert sent == "sent"

    def stats(self) -> dict[str, int]:
        return self.actors.ask(self.registry, "stats", ASK_SECS)


@pytest.fixture
def driver(system: ActorSystem) -> Driver:
    return Driver(system)


def test_released_with_every_command_handled_frees_the_actor(driver: Driver) -> None:
    a = driver.command("s1")
    assert driver.command("s1") == a
    assert driver.stats() == {"open_sessions": 1, "pooled_actors": 2, "backlog_sessions": 0,
                                 "suspended_turns": 0}
    driver.release(a, "s1", 2)
    assert driver.stats() == {"open_sessions": 0, "pooled_actors": 3, "backlog_sessions": 0,
                                 "suspended_turns": 0}
    assert driver.command("s2") == a, "the actor returned last is handed out first"
    assert driver.command("s1") != a, "s1 opens anew, in another actor"


def test_a_command_that_crossed_the_release_keeps_the_slot(driver: Driver) -> None:
    a = driver.command("s1")
    for _ in range(2):
        assert driver.command("s1") == a
    driver.release(a, "s1", 2)  # the third command crossed the release
    assert driver.stats()["open_sessions"] == 1
    b = driver.command("s2")
    assert b != a, "a is still s1's actor"
    assert driver.command("s1") == a, "the session opens again in the same actor"
    driver.release(a, "s1", 1)  # one left of the first three; the fourth crossed too
    assert driver.stats()["open_sessions"] == 2
    assert driver.command("s1") == a
    driver.release(a, "s1", 2)  # the remaining count: the fourth and the fifth
    assert driver.stats() == {"open_sessions": 1, "pooled_actors": 2, "backlog_sessions": 0,
                                 "suspended_turns": 0}
    assert driver.command("s3") == a, "a is free once every forwarded command was handled"


def test_a_release_from_another_actor_is_ignored(driver: Driver) -> None:
    a = driver.command("s1")
    b = driver.command("s2")
    assert a != b
    driver.release(b, "s1", 1)  # b never served s1: the right count, the wrong actor
    assert driver.stats() == {"open_sessions": 2, "pooled_actors": 1, "backlog_sessions": 0,
                                 "suspended_turns": 0}
    assert driver.command("s1") == a
    assert driver.command("s2") == b
    driver.release(b, "s2", 1)  # b's own release, one command short: kept
    assert driver.command("s2") == b
    driver.release(a, "s2", 2)  # a never served s2
    assert driver.stats()["open_sessions"] == 2
    driver.release(b, "s2", 2)
    driver.release(a, "s1", 2)
    assert driver.stats() == {"open_sessions": 0, "pooled_actors": 3, "backlog_sessions": 0,
                                 "suspended_turns": 0}
