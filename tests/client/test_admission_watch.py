"""The "wait for admission, then cancel" rule on its own, driven by hand: no server needed,
since the rule does no I/O (brain/client/admission_watch.py). The sync and asyncio SDKs that
drive it against a real server are tested in test_cancel_signal.py and test_async_client.py."""

from __future__ import annotations

import logging

import pytest

from brain.client.admission_watch import (
    CANCEL,
    FIRST_POLL_SECS,
    MAX_POLL_SECS,
    READ_STATE,
    cancel_after_admission,
)
from brain.client.errors import BrainClientError, ClientClosed
from brain.client.shapes import CancelAnswer

BASELINE = 4


def state(sequence: int | None, status: str = "running") -> dict:
    return {"turn": None if sequence is None else {"sequence": sequence, "status": status}}


def test_polls_with_back_off_until_the_turn_shows_then_cancels_it() -> None:
    watch = cancel_after_admission("s1", BASELINE)
    assert next(watch) == READ_STATE
    waits = []
    step = watch.send(state(BASELINE, "ended"))  # the turn before ours: not admitted yet
    for _ in range(8):
        waits.append(step)
        assert watch.send(False) == READ_STATE
        step = watch.send(state(None))
    assert waits[0] == FIRST_POLL_SECS
    assert waits == sorted(waits) and waits[-1] == MAX_POLL_SECS
    assert watch.send(False) == READ_STATE
    step = watch.send(state(BASELINE + 1))
    assert step[0] == CANCEL and isinstance(step[1], str) and step[1]
    answer = CancelAnswer("s1", BASELINE + 2)
    with pytest.raises(StopIteration) as stop:
        watch.send(answer)
    assert stop.value.value is answer


def test_a_turn_that_already_finished_is_not_cancelled() -> None:
    watch = cancel_after_admission("s1", BASELINE)
    next(watch)
    with pytest.raises(StopIteration) as stop:
        watch.send(state(BASELINE + 1, "ended"))
    assert stop.value.value is None


def test_the_send_returning_first_ends_the_watch() -> None:
    watch = cancel_after_admission("s1", BASELINE)
    next(watch)
    assert watch.send(state(BASELINE)) == FIRST_POLL_SECS
    with pytest.raises(StopIteration) as stop:
        watch.send(True)
    assert stop.value.value is None


def test_a_failed_read_is_logged_and_polled_again(caplog: pytest.LogCaptureFixture) -> None:
    watch = cancel_after_admission("s1", BASELINE)
    next(watch)
    with caplog.at_level(logging.WARNING, logger="brain.client"):
        assert watch.throw(BrainClientError("connection reset")) == FIRST_POLL_SECS
    assert "observe admission failed: connection reset" in caplog.text
    assert watch.send(False) == READ_STATE


def test_a_failed_cancel_is_logged_and_gives_none(caplog: pytest.LogCaptureFixture) -> None:
    watch = cancel_after_admission("s1", BASELINE)
    next(watch)
    assert watch.send(state(BASELINE + 1))[0] == CANCEL
    with caplog.at_level(logging.WARNING, logger="brain.client"), \
            pytest.raises(StopIteration) as stop:
        watch.throw(BrainClientError("503 draining"))
    assert stop.value.value is None
    assert f"cancelling turn {BASELINE + 1} failed: 503 draining" in caplog.text


@pytest.mark.parametrize("at_cancel", [False, True])
def test_a_closed_client_ends_the_watch_with_its_error(at_cancel: bool) -> None:
    watch = cancel_after_admission("s1", BASELINE)
    next(watch)
    if at_cancel:
        watch.send(state(BASELINE + 1))
    with pytest.raises(ClientClosed):
        watch.throw(ClientClosed("closed"))
