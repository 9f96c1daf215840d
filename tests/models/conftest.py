"""Shared fixtures: fake servers that are always torn down, and a per-test alarm."""

from __future__ import annotations

import signal
import threading

import pytest

from .fakes import FakeServer

TEST_TIMEOUT_S = 30


@pytest.fixture(autouse=True)
def _test_deadline():
    """Fail a hung test instead of hanging the run (no pytest-timeout in the venv)."""
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


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake
