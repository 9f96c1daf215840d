"""The warning about an Agentloop computing past BRAIN_COMPUTE_WARN_SECS: once, only while it
computes, never after its activation ended (brain/actors/session/runaway.py)."""

from __future__ import annotations

import logging
import time

import pytest

from brain.actors.session.runaway import LOOK_AGAIN_SECS, RunawayWatch
from tests.support.waiting import wait_for

BOUND = 0.2


def warnings_about(caplog: pytest.LogCaptureFixture, session: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and f"session {session}:" in r.getMessage()]


def test_a_computing_loop_is_named_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="brain.agentloop")
    watch = RunawayWatch("s-computing", 7, "mine", BOUND)
    wait_for(lambda: watch.warned, timeout=5, what="the warning")
    time.sleep(3 * BOUND)
    watch.stop()
    [message] = warnings_about(caplog, "s-computing")
    assert "turn 7" in message and "'mine'" in message and "computing" in message


def test_a_loop_waiting_on_a_call_is_named_only_once_it_computes_again(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="brain.agentloop")
    watch = RunawayWatch("s-waiting", 3, "mine", BOUND)
    with watch.waiting():
        time.sleep(3 * BOUND)  # the bound passes while the guest waits on a model
    assert not warnings_about(caplog, "s-waiting")
    wait_for(lambda: watch.warned, timeout=LOOK_AGAIN_SECS + 5, what="the warning")
    watch.stop()
    assert len(warnings_about(caplog, "s-waiting")) == 1


def test_an_activation_that_ends_in_time_is_never_named(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="brain.agentloop")
    watch = RunawayWatch("s-quick", 1, "mine", BOUND)
    watch.stop()
    time.sleep(3 * BOUND)
    assert not watch.warned and not warnings_about(caplog, "s-quick")


def test_a_bound_of_zero_never_warns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="brain.agentloop")
    watch = RunawayWatch("s-off", 1, "mine", 0)
    time.sleep(2 * BOUND)
    assert not watch.warned and not warnings_about(caplog, "s-off")
