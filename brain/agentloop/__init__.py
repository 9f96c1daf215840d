"""The Agentloop platform: run Wasm Agentloops (docs/agentloop.md) against Brain's guest calls.

    rt = AgentloopRuntime(memory_limit_bytes=256 << 20, max_payload_bytes=8 << 20)
    result = rt.activate(path, payload, guest_call, deadline)

`DEFAULT_AGENTLOOP` is the shipped default loop, built from agentloops/default/.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain.agentloop.errors import AgentloopError

if TYPE_CHECKING:
    from brain.agentloop.modules import load_module_info
    from brain.agentloop.runtime import ActivationStopper, AgentloopRuntime

DEFAULT_AGENTLOOP = Path(__file__).with_name("default.wasm")

# Imported on first use: they import wasmtime (about 0.1 s), which every process that only
# names a submodule of this package (the CLI's parsers, the supervisor reading the
# configuration) would otherwise pay at start.
_LAZY = {"ActivationStopper": "brain.agentloop.runtime",
         "AgentloopRuntime": "brain.agentloop.runtime",
         "load_module_info": "brain.agentloop.modules"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

__all__ = [
    "ActivationStopper",
    "AgentloopRuntime",
    "AgentloopError",
    "load_module_info",
    "DEFAULT_AGENTLOOP",
]
