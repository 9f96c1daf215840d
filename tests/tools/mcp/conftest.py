"""The MCP SDK is the `mcp` extra (in `.[dev]` too): without it these tests skip, saying so.
A per-test alarm makes a hung test fail instead of hanging the run."""

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install '.[mcp]')")

from tests.support.alarm import per_test_alarm  # noqa: E402,F401 - autouse for this package
