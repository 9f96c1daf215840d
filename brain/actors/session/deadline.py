"""A turn's deadline on the clock the Agentloop is stopped by.

The core decides a turn's one deadline, in epoch milliseconds (`Turn.deadline_ms`, from
BRAIN_MAX_TURN_SECS when the turn began); its `TurnDeadline` timer and the Wasm epoch that
stops a running guest both follow it, for a first activation and for a resumed one alike.
"""

from __future__ import annotations

import time


def monotonic_deadline(deadline_ms: int | None) -> float | None:
    """`deadline_ms` as a `time.monotonic()` instant; None for no deadline."""
    if deadline_ms is None:
        return None
    return time.monotonic() + (deadline_ms - time.time_ns() // 1_000_000) / 1000.0
