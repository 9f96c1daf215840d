"""A per-test alarm, so that a hung test fails instead of hanging the run.

The venv has no pytest-timeout. A package whose tests talk to sockets or processes that could
hang imports `per_test_alarm` into its conftest.py, which makes it autouse for that package only:
the end-to-end tests keep their own, longer waits.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

TEST_TIMEOUT_S = 30


@pytest.fixture(autouse=True)
def per_test_alarm() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"test exceeded {TEST_TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_TIMEOUT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
