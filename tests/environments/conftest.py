"""Per-test alarm, so that a hung test fails instead of hanging the run."""

from __future__ import annotations

import signal
import threading

import pytest

TEST_TIMEOUT_S = 30


@pytest.fixture(autouse=True)
def _test_deadline():
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise TimeoutError(f"test exceeded {TEST_TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_TIMEOUT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
