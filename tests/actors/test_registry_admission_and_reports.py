"""The registry's side of the hand-over of admitted turns and of deferred release reports
(brain/actors/registry/actor.py).

A web worker sends `AdmittedTurns` until the registry answers `Reply(request_id)`, so a batch
whose answer was lost arrives twice. The registry must confirm every batch, and must not queue
a session's admitted turn twice while it waits in the backlog for an actor.

A session actor reports its releases late (brain/actors/session/release_report.py). When work
starts
to wait for an actor, the registry asks each actor holding a slot to report now, once per
command forwarded; a report that covers several opens counts them all toward recycling.

The real Registry runs in-process on Thespian's simpleSystemBase with a fixed pool of stand-in
session actors that only count the `RunAdmitted` and `ReportRelease` messages they get.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from thespian.actors import ActorSystem, ActorTypeDispatcher

from brain.actors.registry.admitted_starts import QUIET_SECS
from brain.protocol.messages import (
    AdmittedTurns,
    CancelTurn,
    Delivered,
    FillPool,
    Released,
    Reply,
    ReportRelease,
    RunAdmitted,
    ToSession,
    Warmed,
    WarmUp,
)
from tests.support.registry_harness import FixedPoolRegistry, in_process_actors

ASK_SECS = 5


class CountingSessionActor(ActorTypeDispatcher):
    """Answers a command that has an asker; counts, per session, the RunAdmitted it got."""

    def __init__(self) -> None:
        super().__init__()
        self.admitted: dict[str, int] = {}
        self.asked_to_report = 0
        self.busy: list[bool] = []

    def receiveMsg_ReportRelease(self, msg: ReportRelease, sender: Any) -> None:
        self.asked_to_report += 1

    def receiveMsg_WarmUp(self, msg: WarmUp, sender: Any) -> None:
        self.send(sender, Warmed())

    def receiveMsg_Delivered(self, msg: Delivered, sender: Any) -> None:
        self.busy.append(msg.busy)
        if isinstance(msg.command, RunAdmitted):
            self.admitted[msg.session_id] = self.admitted.get(msg.session_id, 0) + 1
        else:
            self.send(msg.reply_to, Reply(msg.request_id, body={"actor": self.myAddress}))

    def receiveMsg_tuple(self, msg: tuple[Any, ...], sender: Any) -> None:
        if msg[0] == "admitted":
            self.send(sender, dict(self.admitted))
        elif msg[0] == "asked":
            self.send(sender, self.asked_to_report)
        elif msg[0] == "busy":
            self.send(sender, list(self.busy))
        elif msg[0] == "release":  # ("release", registry, session_id, handled, opens)
            _, registry, session_id, handled, opens = msg
            self.send(registry, Released(session_id, handled, opens=opens))
            self.send(sender, "sent")


class CountingRegistry(FixedPoolRegistry):
    """Counting stand-ins, and one CPU."""

    stand_in = CountingSessionActor

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cpus = 1


@pytest.fixture
def actors(tmp_path, monkeypatch) -> Iterator[ActorSystem]:
    with in_process_actors(tmp_path, monkeypatch, BRAIN_SESSION_POOL_SIZE="2",
                           BRAIN_MAX_SESSION_ACTORS="2",  # no fork for the backlog
                           BRAIN_SESSION_ACTOR_SESSIONS="3") as system:
        yield system


def start_registry(actors: ActorSystem) -> Any:
    registry = actors.createActor(CountingRegistry)
    assert actors.ask(registry, FillPool(), ASK_SECS) == "filled"
    return registry


def hand_over(actors: ActorSystem, registry: Any, request_id: str, *session_ids: str) -> None:
    """Hand admitted turns over, and wait out the moment the registry holds them back while
    submits stream in (brain/actors/registry/admitted_starts.py)."""
    answer = actors.ask(registry, AdmittedTurns(request_id, session_ids), ASK_SECS)
    assert isinstance(answer, Reply) and answer.request_id == request_id, answer
    assert answer.body == {"taken": len(session_ids)}
    time.sleep(QUIET_SECS * 4)
    actors.ask(registry, "stats", ASK_SECS)  # the in-process system runs the timer meanwhile


def busy_actor(actors: ActorSystem, registry: Any, session_id: str) -> Any:
    """Give `session_id` an actor with a command; that actor's address."""
    answer = actors.ask(registry, ToSession(f"cmd-{session_id}", session_id, CancelTurn()),
                        ASK_SECS)
    assert isinstance(answer, Reply), answer
    return answer.body["actor"]


def admitted_counts(actors: ActorSystem, *session_actors: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    for actor in session_actors:
        for session_id, count in actors.ask(actor, ("admitted",), ASK_SECS).items():
            total[session_id] = total.get(session_id, 0) + count
    return total


def test_every_batch_is_confirmed_and_each_turn_delivered(actors: ActorSystem) -> None:
    registry = start_registry(actors)
    hand_over(actors, registry, "b1", "s1", "s2")
    one = busy_actor(actors, registry, "s1")
    two = busy_actor(actors, registry, "s2")
    assert one != two
    assert admitted_counts(actors, one, two) == {"s1": 1, "s2": 1}


def test_a_repeated_batch_waiting_in_the_backlog_is_queued_once(actors: ActorSystem) -> None:
    registry = start_registry(actors)
    one = busy_actor(actors, registry, "s1")
    two = busy_actor(actors, registry, "s2")
    hand_over(actors, registry, "b1", "s3")
    hand_over(actors, registry, "b1", "s3")  # the same batch again: its answer was "lost"
    assert actors.ask(registry, "stats", ASK_SECS)["backlog_sessions"] == 1
    assert actors.ask(one, ("release", registry, "s1", 1, 1), ASK_SECS) == "sent"
    # The freed actor takes s3 from the backlog: one RunAdmitted, not two.
    assert actors.ask(registry, "stats", ASK_SECS)["backlog_sessions"] == 0
    assert admitted_counts(actors, one, two) == {"s3": 1}


def asked(actors: ActorSystem, actor: Any) -> int:
    return actors.ask(actor, ("asked",), ASK_SECS)


def test_work_that_starts_to_wait_asks_each_slot_once_to_report(actors: ActorSystem) -> None:
    registry = start_registry(actors)
    one = busy_actor(actors, registry, "s1")
    two = busy_actor(actors, registry, "s2")
    assert (asked(actors, one), asked(actors, two)) == (0, 0), "nothing waited yet"
    hand_over(actors, registry, "b1", "s3")  # the backlog was empty: ask
    assert (asked(actors, one), asked(actors, two)) == (1, 1)
    hand_over(actors, registry, "b2", "s4")  # still waiting: the board says so, no more asks
    assert (asked(actors, one), asked(actors, two)) == (1, 1)
    assert actors.ask(one, ("release", registry, "s1", 1, 1), ASK_SECS) == "sent"
    assert actors.ask(registry, "stats", ASK_SECS)["backlog_sessions"] == 1, "s3 got one"


def test_a_report_of_several_opens_counts_them_toward_recycling(actors: ActorSystem) -> None:
    registry = start_registry(actors)  # actors retire after 3 sessions opened
    one = busy_actor(actors, registry, "s1")
    assert actors.ask(one, ("release", registry, "s1", 1, 1), ASK_SECS) == "sent"
    assert actors.ask(registry, "stats", ASK_SECS)["pooled_actors"] == 2, "back in the pool"
    assert busy_actor(actors, registry, "s2") == one, "the actor returned last goes first"
    # s2 opened twice in it (the second time before the report): 1 + 2 = 3 sessions served.
    assert actors.ask(one, ("release", registry, "s2", 1, 2), ASK_SECS) == "sent"
    assert actors.ask(registry, "stats", ASK_SECS) == \
        {"open_sessions": 0, "pooled_actors": 1, "backlog_sessions": 0,
         "suspended_turns": 0}, "retired, not pooled"


def test_commands_are_marked_busy_while_more_sessions_than_cpus_are_served(
        actors: ActorSystem) -> None:
    registry = start_registry(actors)  # one CPU
    one = busy_actor(actors, registry, "s1")
    two = busy_actor(actors, registry, "s2")
    busy_actor(actors, registry, "s1")
    assert actors.ask(one, ("busy",), ASK_SECS) == [False, True], "alone, then with s2"
    assert actors.ask(two, ("busy",), ASK_SECS) == [True]
