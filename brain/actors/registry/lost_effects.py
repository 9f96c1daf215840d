"""Which effects each shared actor holds while they run, so its death can settle them.

An executor keeps the effects it was sent in its own process until their outcomes go back. When
that process dies, those outcomes will never come: each such effect is settled `unknown` by the
session that journaled it (brain/sessions/core.py, `EffectsLost`), never sent again, the same
rule a restart applies. A HostDispatcher's death is settled inside the executors whose host calls
it held (brain/actors/executors/host_calls.py); the other shared actors hold no effect.
"""

from __future__ import annotations

from brain.protocol.messages import (
    ENVIRONMENT_EXECUTOR_GLOBAL_NAME,
    MODEL_EXECUTOR_GLOBAL_NAME,
    TOOL_EXECUTOR_GLOBAL_NAME,
)

EFFECTS_HELD_BY: dict[str, tuple[str, ...]] = {
    MODEL_EXECUTOR_GLOBAL_NAME: ("model_call",),
    TOOL_EXECUTOR_GLOBAL_NAME: ("tool_call",),
    ENVIRONMENT_EXECUTOR_GLOBAL_NAME: ("environment_op",),
}
"""Global name → the effect kinds (as `*_started` records name them) its actor carries out."""
