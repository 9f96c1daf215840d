"""Parking an effect as it is sent (brain/actors/park_at_once.py): the session actor marks
it,
and the executor sends its outcome to the registry with no `Parked`; an unmarked effect is the
executor's to park, as before.

The executor is driven by hand, outside any actor system: `send` is recorded, and the bridge
drained by calling its WatchMessage handler.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from brain.actors.admission_board import BoardReader, BoardWriter
from brain.actors.executors.model import ModelExecutor
from brain.actors.park_at_once import ParkAtOnce
from brain.protocol.effects import (
    EffectDone,
    Parked,
    RunEnvironmentOp,
    RunModelCall,
    RunToolCall,
)
from brain.protocol.messages import REGISTRY_GLOBAL_NAME, Services

WAITING = {"name": "slow", "provider": "scripted", "script": [{"text": "hi", "delay_ms": 30}]}
AT_ONCE = {"name": "quick", "provider": "scripted", "script": [{"text": "hi"}]}
REQUEST = {"messages": [{"role": "user", "content": "x"}]}


def model_call(model: dict[str, Any], started: int = 3, park: bool = False) -> RunModelCall:
    return RunModelCall("s1", started, model, REQUEST, park=park)


def tool_call(function: str, started: int = 4) -> RunToolCall:
    return RunToolCall("s1", started, {"route": "builtin", "function": function}, {}, None, [])


@pytest.fixture
def board(tmp_path: Path) -> tuple[BoardWriter, BoardReader]:
    return BoardWriter(tmp_path), BoardReader(tmp_path)


def test_nothing_is_marked_within_the_grace_while_no_work_waits(board: Any) -> None:
    _, reader = board
    messages = [model_call(WAITING)]
    assert ParkAtOnce(50, reader).mark(messages, {}) == (messages, [])


def test_a_backlog_marks_the_effects_that_wait(board: Any) -> None:
    writer, reader = board
    writer.publish(1, 4)
    env_op = RunEnvironmentOp("s1", 6, {}, "create", {})
    messages = [model_call(WAITING), model_call(AT_ONCE, 5), tool_call("echo"), env_op]
    marked, parked = ParkAtOnce(50, reader).mark(messages, {})
    assert marked == [model_call(WAITING, park=True), *messages[1:]]
    assert parked == [Parked("s1", 3)]


def test_no_grace_marks_without_reading_the_board(board: Any) -> None:
    _, reader = board
    other = {"name": "remote", "provider": "openai", "model": "x"}
    marked, parked = ParkAtOnce(0, reader).mark([model_call(other)], {})
    assert marked == [model_call(other, park=True)] and parked == [Parked("s1", 3)]


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, Any]] = []

    def __call__(self, to: Any, msg: Any) -> None:
        self.sent.append((to, msg))


def executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace_ms: int) -> Any:
    monkeypatch.setenv("BRAIN_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BRAIN_SUSPEND_AFTER_MS", str(grace_ms))
    actor = ModelExecutor()
    actor.send = Recorder()
    actor.wakeupAfter = lambda secs, payload: None
    actor.receiveMessage(Services({REGISTRY_GLOBAL_NAME: "registry"}), None)
    return actor


def outcomes(actor: Any) -> list[tuple[Any, Any]]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        actor.receiveMsg_WatchMessage(None, None)
        done = [(to, m) for to, m in actor.send.sent if isinstance(m, EffectDone)]
        if done:
            return done
        time.sleep(0.01)
    raise AssertionError("no outcome")


@pytest.mark.parametrize("model", [WAITING, AT_ONCE], ids=["waits", "at-once"])
def test_a_marked_effect_goes_to_the_registry_unannounced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: dict[str, Any]) -> None:
    actor = executor(tmp_path, monkeypatch, 60_000)
    actor.receiveMessage(model_call(model, park=True), "session")
    assert [to for to, _ in outcomes(actor)] == ["registry"]
    assert not [m for _, m in actor.send.sent if isinstance(m, Parked)]
    assert not actor._unparked and not actor.routes


def test_an_unmarked_effect_is_still_parked_by_the_executor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    actor = executor(tmp_path, monkeypatch, 0)
    actor.receiveMessage(model_call(WAITING), "session")
    assert actor.send.sent[0] == ("session", Parked("s1", 3))
    assert [to for to, _ in outcomes(actor)] == ["registry"]


def test_an_unmarked_effect_within_the_grace_answers_its_sender(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    actor = executor(tmp_path, monkeypatch, 60_000)
    actor.receiveMessage(model_call(WAITING), "session")
    assert [to for to, _ in outcomes(actor)] == ["session"]
    assert not [m for _, m in actor.send.sent if isinstance(m, Parked)]
