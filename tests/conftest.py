"""Shared fixtures: a real Brain server per test, always torn down. Tests marked `torture`
run only when asked for (`pytest -m torture`), whichever directory is run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import TEST_AGENTLOOP_CACHE, BrainServer
from tests.support.tls import certificate  # noqa: F401 - a fixture for the TLS tests

# Compiles made by the tests themselves (`brain agentloop build` and `check` in a subprocess,
# replays) fill the checkout's test cache, never the cache of the user who runs them.
os.environ.setdefault("BRAIN_AGENTLOOP_CACHE", str(TEST_AGENTLOOP_CACHE))


@pytest.fixture
def brain_server(tmp_path: Path) -> Iterator[BrainServer]:
    server = BrainServer(tmp_path / "data").start()
    try:
        yield server
    finally:
        server.kill()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "torture" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="long torture run: select it with -m torture")
    for item in items:
        if "torture" in item.keywords:
            item.add_marker(skip)
