"""Shared fixtures: fake servers that are always torn down, and a per-test alarm."""

from __future__ import annotations

import pytest

from tests.support.alarm import per_test_alarm  # noqa: F401 - autouse for this package

from .fakes import FakeServer


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake
