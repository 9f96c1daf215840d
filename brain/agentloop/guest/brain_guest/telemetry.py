"""A metric or trace point for the deployment's telemetry sink (not journaled)."""

from __future__ import annotations

from typing import Any

from brain_guest._host import call


def record(name: str, value: Any = None, attributes: dict[str, Any] | None = None) -> None:
    """Record `name`: dropped unless the deployment configured a telemetry sink."""
    request: dict[str, Any] = {"op": "telemetry.record", "name": name, "value": value}
    if attributes is not None:
        request["attributes"] = attributes
    call(request)
