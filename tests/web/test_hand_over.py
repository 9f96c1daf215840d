"""The web worker's hand-over of admitted turns (brain/web/hand_over.py): a batch the registry
did not confirm (no answer in time, or the send raised) is sent again until it is, with the
pauses growing; turns admitted meanwhile join it; nothing is dropped and order is kept.

`send` stands for the registry's side: it answers as the test scripts it, as a registry whose
answers are lost would, and records every batch it was given.
"""

from __future__ import annotations

import threading

from brain.web.hand_over import BATCH, FIRST_RETRY_SECS, MAX_RETRY_SECS, HandOver


class ScriptedRegistry:
    def __init__(self, outcomes: list[object]) -> None:
        self.outcomes = outcomes  # per send: True, False, or an exception to raise
        self.batches: list[tuple[str, ...]] = []
        self.sent = threading.Event()

    def send(self, batch: tuple[str, ...]) -> bool:
        self.batches.append(batch)
        self.sent.set()
        outcome = self.outcomes.pop(0) if self.outcomes else True
        if isinstance(outcome, Exception):
            raise outcome
        return bool(outcome)


def test_a_confirmed_batch_is_sent_once() -> None:
    registry = ScriptedRegistry([True])
    hand_over = HandOver(registry.send, pause=lambda secs: None)
    for session_id in ("a", "b", "a"):
        hand_over.put(session_id)
    owed: list[str] = []
    hand_over.run_once(owed)
    assert registry.batches == [("a", "b")], "in order, a session told once"
    assert owed == []


def test_an_unconfirmed_batch_is_sent_again_until_confirmed() -> None:
    registry = ScriptedRegistry([False, OSError("connection reset"), False, True])
    pauses: list[float] = []
    hand_over = HandOver(registry.send, pause=pauses.append)
    hand_over.put("a")
    owed: list[str] = []
    hand_over.run_once(owed)
    assert registry.batches == [("a",)] * 4
    assert pauses == [FIRST_RETRY_SECS, 2 * FIRST_RETRY_SECS, 4 * FIRST_RETRY_SECS]
    assert owed == []


def test_pauses_stop_growing_at_the_bound() -> None:
    registry = ScriptedRegistry([False] * 12)
    pauses: list[float] = []
    hand_over = HandOver(registry.send, pause=pauses.append)
    hand_over.put("a")
    hand_over.run_once([])
    assert len(registry.batches) == 13
    assert max(pauses) == MAX_RETRY_SECS and pauses[-1] == MAX_RETRY_SECS


def test_turns_admitted_during_a_retry_join_the_batch() -> None:
    hand_over: HandOver
    registry = ScriptedRegistry([False, True])

    def pause(secs: float) -> None:
        hand_over.put("b")  # admitted while the first attempt went unconfirmed

    hand_over = HandOver(registry.send, pause=pause)
    hand_over.put("a")
    hand_over.run_once([])
    assert registry.batches == [("a",), ("a", "b")]


def test_a_burst_goes_in_batches_oldest_first() -> None:
    registry = ScriptedRegistry([])
    hand_over = HandOver(registry.send, pause=lambda secs: None)
    ids = [f"s{n}" for n in range(BATCH + 10)]
    for session_id in ids:
        hand_over.put(session_id)
    owed: list[str] = []
    hand_over.run_once(owed)
    hand_over.run_once(owed)
    assert registry.batches == [tuple(ids[:BATCH]), tuple(ids[BATCH:])]


def test_the_loop_waits_for_work_and_then_hands_it_over() -> None:
    registry = ScriptedRegistry([])
    hand_over = HandOver(registry.send, pause=lambda secs: None)
    threading.Thread(target=hand_over.run_forever, daemon=True).start()
    assert not registry.sent.wait(0.2), "nothing admitted, nothing sent"
    hand_over.put("late")
    assert registry.sent.wait(5), "the admitted turn was never handed over"
    assert registry.batches == [("late",)]
