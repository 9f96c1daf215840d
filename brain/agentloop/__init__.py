"""The Agentloop platform: run Wasm Agentloops (docs/agentloop.md) against Brain's guest calls.

    rt = AgentloopRuntime(memory_limit_bytes=256 << 20, max_payload_bytes=8 << 20)
    result = rt.activate(path, payload, guest_call, deadline)

`DEFAULT_AGENTLOOP` is the shipped default loop, built from agentloops/default/.
"""

from pathlib import Path

from brain.agentloop.errors import AgentloopError
from brain.agentloop.modules import load_module_info
from brain.agentloop.runtime import ActivationStopper, AgentloopRuntime

DEFAULT_AGENTLOOP = Path(__file__).with_name("default.wasm")

__all__ = [
    "ActivationStopper",
    "AgentloopRuntime",
    "AgentloopError",
    "load_module_info",
    "DEFAULT_AGENTLOOP",
]
