"""Shared fixtures: a real Brain server per test, always torn down. Tests marked `torture`
run only when asked for (`pytest -m torture`), whichever directory is run."""

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "torture" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="long torture run: select it with -m torture")
    for item in items:
        if "torture" in item.keywords:
            item.add_marker(skip)
