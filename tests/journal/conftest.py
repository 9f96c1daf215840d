"""Journal test settings: `torture` runs only when asked for (`pytest -m torture`)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "torture" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="long torture run: select it with -m torture")
    for item in items:
        if "torture" in item.keywords:
            item.add_marker(skip)
