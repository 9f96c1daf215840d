"""What one webhook attempt's result comes to: the record to journal and when to try again.

Pure, so the bounded exponential backoff is tested without an actor or a clock: after failed
attempt n the pause is `first_ms * 2**(n-1)`, at most `max_ms`, and after `attempts` failures
the delivery is abandoned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brain.net.webhook_post import AttemptResult
from brain.sessions import records


@dataclass(frozen=True)
class Backoff:
    """The retry bounds (BRAIN_WEBHOOK_ATTEMPTS, _RETRY_MS, _RETRY_MAX_MS)."""

    attempts: int
    first_ms: int
    max_ms: int

    def pause_ms(self, failed: int) -> int:
        """The pause after the `failed`-th failed attempt (1, 2, ...)."""
        return min(self.first_ms * (1 << min(failed - 1, 30)), self.max_ms)


def after_attempt(delivery_id: str, attempt: int, result: AttemptResult, backoff: Backoff
                  ) -> tuple[dict[str, Any], int | None]:
    """The record attempt `attempt` (1, 2, ...) leaves, and the pause before the next one in
    milliseconds (None: the delivery is over, done or abandoned)."""
    if result.ok:
        return records.webhook_delivery_done(delivery_id, attempt, result.status or 0), None
    if attempt >= backoff.attempts:
        return records.webhook_delivery_abandoned(
            delivery_id, attempt, f"{attempt} attempts failed; the last: {result.error}"), None
    pause = backoff.pause_ms(attempt)
    return records.webhook_delivery_attempted(delivery_id, attempt, result.status, result.error,
                                              pause), pause
