"""brain/sessions/carry_out.py: one order for every Step, and what each mode may carry out."""

from __future__ import annotations

from typing import Any

import pytest

from brain.protocol.targets import Target
from brain.sessions.carry_out import Mode, NotInMode, carry_out, fits
from brain.sessions.state import (
    ClientReply,
    GuestAnswer,
    Limits,
    Phase,
    Requester,
    Send,
    SessionState,
    Step,
    StopActivation,
    Timer,
)


class Recorder:
    """Hands that write down what they were asked to do, in order."""

    def __init__(self) -> None:
        self.done: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args: self.done.append((name, args[0] if len(args) == 1 else args))


RUNNING = SessionState("s", Limits(), phase=Phase.RUNNING)
IDLE = SessionState("s", Limits(), phase=Phase.IDLE)
RECORD = {"seq": 7, "kind": "kv_put", "at": 1, "key": "k", "value": 1}
WHO = Requester("inbox", "r1")


def test_the_records_come_first_and_the_release_last() -> None:
    step = Step(IDLE, records=(RECORD,),
                sends=(Send(Target.REGISTRY, "release"), Send(Target.MODEL_EXECUTOR, "m1"),
                       Send(Target.TOOL_EXECUTOR, "t1"), Send(Target.MODEL_EXECUTOR, "m2")),
                actions=(StopActivation(),), replies=(ClientReply(WHO, {}),), checkpoint=True,
                timers=(Timer(1.0, "tick"),), notes=("late",))
    hands = Recorder()
    carry_out(step, Mode.FULL, hands)
    assert [name for name, _ in hands.done] == [
        "commit", "adopt", "send", "send", "act", "answer", "answered", "checkpoint", "arm",
        "note", "release"]
    assert hands.done[2] == ("send", (Target.MODEL_EXECUTOR, ["m1", "m2"]))  # one per target
    assert hands.done[3] == ("send", (Target.TOOL_EXECUTOR, ["t1"]))
    assert hands.done[-1] == ("release", "release")


def test_an_idle_session_with_no_release_is_at_rest() -> None:
    hands = Recorder()
    carry_out(Step(IDLE, replies=(ClientReply(WHO, {}),)), Mode.FULL, hands)
    assert [name for name, _ in hands.done][-1] == "at_rest"


def test_inline_carries_out_only_records_and_one_guest_answer() -> None:
    answer_only = Step(RUNNING, records=(RECORD,), replies=(GuestAnswer(3, {}),))
    assert fits(answer_only, Mode.INLINE)
    hands = Recorder()
    carry_out(answer_only, Mode.INLINE, hands)
    assert [name for name, _ in hands.done] == ["commit", "adopt", "answer", "answered"]
    for step in (Step(RUNNING, records=(RECORD,), replies=(GuestAnswer(3, {}),),
                      sends=(Send(Target.MODEL_EXECUTOR, "m"),)),
                 Step(RUNNING, replies=(GuestAnswer(3, {}), GuestAnswer(4, {}))),
                 Step(RUNNING, replies=(ClientReply(WHO, {}),)),
                 Step(IDLE, replies=(GuestAnswer(3, {}),)),
                 Step(RUNNING, replies=(GuestAnswer(3, {}),), timers=(Timer(1, "t"),))):
        hands = Recorder()
        with pytest.raises(NotInMode):
            carry_out(step, Mode.INLINE, hands)
        assert hands.done == []  # nothing of it happened


def test_admission_carries_out_only_records_and_the_clients_reply() -> None:
    admitted = Step(RUNNING, records=(RECORD,), replies=(ClientReply(WHO, {"receipt": 1}),))
    assert fits(admitted, Mode.ADMISSION)
    assert not fits(Step(RUNNING, records=(RECORD,), replies=(GuestAnswer(1, {}),)),
                    Mode.ADMISSION)
    assert not fits(Step(RUNNING, replies=(ClientReply(WHO, {}),),
                         sends=(Send(Target.MODEL_EXECUTOR, "m"),)), Mode.ADMISSION)


def test_a_replay_matches_records_and_answers_the_guest_but_sends_nothing() -> None:
    step = Step(RUNNING, records=(RECORD,), sends=(Send(Target.MODEL_EXECUTOR, "m"),),
                actions=(StopActivation(),), replies=(GuestAnswer(2, {"ok": True}),),
                timers=(Timer(1, "t"),))
    hands = Recorder()
    carry_out(step, Mode.REPLAY, hands)
    assert [name for name, _ in hands.done] == ["commit", "adopt", "answer"]
