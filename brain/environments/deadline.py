"""Wall-clock deadlines, measured on the monotonic clock once they are in hand.

Deadlines arrive as `time.time()` epochs because that is what `tool_call_started` journals and
what an http Tool is told. Comparing against the wall clock while waiting would let an NTP step
shorten or stretch a call, so the epoch is converted once, on arrival, into a monotonic instant.
Tools route to Environments, never the other way round, so this lower layer owns the helper.
"""

from __future__ import annotations

import time

POLL_S = 0.05
"""How often waiting code looks at its cancel event and deadline."""


class Deadline:
    """A point in time that may be absent (no bound)."""

    def __init__(self, epoch: float | None) -> None:
        self.epoch = epoch
        self._at = None if epoch is None else time.monotonic() + (epoch - time.time())

    @classmethod
    def earliest(cls, epoch: float | None, within_s: float | None) -> Deadline:
        """The sooner of an epoch deadline and `within_s` seconds from now (either may be None)."""
        if within_s is None:
            return cls(epoch)
        local = time.time() + within_s
        return cls(local if epoch is None else min(epoch, local))

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None when unbounded."""
        if self._at is None:
            return None
        return max(0.0, self._at - time.monotonic())

    def expired(self) -> bool:
        return self._at is not None and time.monotonic() >= self._at

    def poll_interval(self, cap: float = POLL_S) -> float:
        """How long to block before looking again: `cap`, or less if the deadline is closer."""
        remaining = self.remaining()
        return cap if remaining is None else min(cap, remaining)
