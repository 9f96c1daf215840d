"""Boot's start-up recoveries reach the registry, confirmed
(brain/actors/registry/recovery_hand_over.py).

The real Registry runs in-process on Thespian's simpleSystemBase with a fixed pool of stand-in
session actors that count the `Recover` commands delivered to them. Registries that drop a
batch, or take it and never answer, stand for a transmit Thespian lost without a word.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from thespian.actors import ActorSystem, ActorTypeDispatcher

from brain.actors.registry import recovery_hand_over
from brain.actors.registry.recovery_hand_over import RecoveryNotTaken, hand_over_recoveries
from brain.protocol.messages import (
    Delivered,
    FillPool,
    Recover,
    RecoverSessions,
    Warmed,
    WarmUp,
)
from tests.support.registry_harness import FixedPoolRegistry, in_process_actors

ASK_SECS = 5
SHORT_CONFIRM_SECS = 0.3


class RecoverCounter(ActorTypeDispatcher):
    def __init__(self) -> None:
        super().__init__()
        self.recovered: dict[str, int] = {}

    def receiveMsg_WarmUp(self, msg: WarmUp, sender: Any) -> None:
        self.send(sender, Warmed())

    def receiveMsg_Delivered(self, msg: Delivered, sender: Any) -> None:
        assert isinstance(msg.command, Recover) and msg.reply_to is None
        self.recovered[msg.session_id] = self.recovered.get(msg.session_id, 0) + 1

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == "recovered":
            self.send(sender, dict(self.recovered))


class CountingRegistry(FixedPoolRegistry):
    stand_in = RecoverCounter

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == "actors":
            self.send(sender, [slot.actor.address for slot in self._slots.values()])
        else:
            super().receiveMsg_str(msg, sender)


class DropsFirstBatch(CountingRegistry):
    """The first batch never arrives."""

    def receiveMsg_RecoverSessions(self, msg: RecoverSessions, sender: Any) -> None:
        if getattr(self, "_dropped", False):
            super().receiveMsg_RecoverSessions(msg, sender)
        else:
            self._dropped = True


class LosesFirstAnswer(CountingRegistry):
    """The first batch is taken, and its answer lost."""

    def receiveMsg_RecoverSessions(self, msg: RecoverSessions, sender: Any) -> None:
        first = not getattr(self, "_answered_once", False)
        self._answered_once = True
        super().receiveMsg_RecoverSessions(msg, None if first else sender)


class NeverAnswers(CountingRegistry):
    def receiveMsg_RecoverSessions(self, msg: RecoverSessions, sender: Any) -> None:
        pass


@pytest.fixture
def actors(tmp_path, monkeypatch) -> Iterator[ActorSystem]:
    with in_process_actors(tmp_path, monkeypatch, BRAIN_SESSION_POOL_SIZE="8",
                           BRAIN_MAX_SESSION_ACTORS="8") as system:
        yield system


def start(actors: ActorSystem, registry_class: type) -> Any:
    registry = actors.createActor(registry_class)
    assert actors.ask(registry, FillPool(), ASK_SECS) == "filled"
    return registry


def recovered(actors: ActorSystem, registry: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    for actor in actors.ask(registry, "actors", ASK_SECS):
        for session_id, count in actors.ask(actor, "recovered", ASK_SECS).items():
            total[session_id] = total.get(session_id, 0) + count
    return total


SESSIONS = [f"s{n}" for n in range(5)]


def test_every_session_gets_one_recover_in_batches(actors, monkeypatch) -> None:
    monkeypatch.setattr(recovery_hand_over, "BATCH", 2)  # three batches
    registry = start(actors, CountingRegistry)
    assert hand_over_recoveries(actors, registry, iter(SESSIONS)) == 5
    assert recovered(actors, registry) == dict.fromkeys(SESSIONS, 1)


def test_a_batch_that_never_arrived_is_sent_again(actors) -> None:
    registry = start(actors, DropsFirstBatch)
    hand_over_recoveries(actors, registry, SESSIONS, confirm_secs=SHORT_CONFIRM_SECS)
    assert recovered(actors, registry) == dict.fromkeys(SESSIONS, 1)


def test_a_batch_whose_answer_was_lost_is_sent_again(actors) -> None:
    """The repeat reaches the sessions' actors a second time: harmless, a recovery of a
    recovered session records nothing."""
    registry = start(actors, LosesFirstAnswer)
    hand_over_recoveries(actors, registry, SESSIONS, confirm_secs=SHORT_CONFIRM_SECS)
    assert recovered(actors, registry) == dict.fromkeys(SESSIONS, 2)


def test_a_registry_that_never_answers_stops_the_boot(actors) -> None:
    registry = start(actors, NeverAnswers)
    with pytest.raises(RecoveryNotTaken):
        hand_over_recoveries(actors, registry, SESSIONS, confirm_secs=0.05)


def test_nothing_in_flight_sends_nothing(actors) -> None:
    registry = start(actors, NeverAnswers)
    assert hand_over_recoveries(actors, registry, []) == 0
