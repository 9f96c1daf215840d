"""Shared fixtures: a real Brain server per test, always torn down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import BrainServer
from tests.support.tls import certificate  # noqa: F401 - a fixture for the TLS tests


@pytest.fixture
def brain_server(tmp_path: Path) -> Iterator[BrainServer]:
    server = BrainServer(tmp_path / "data").start()
    try:
        yield server
    finally:
        server.kill()
