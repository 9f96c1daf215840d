"""Guest calls as plain JSON, for loops that speak the wire format themselves."""

from __future__ import annotations

from typing import Any

from brain_guest._host import exchange


def call_raw(request: Any) -> Any:
    """Send `request` as it is; its result as Brain sent it (an error result included)."""
    return exchange(request)
