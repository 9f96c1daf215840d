"""The bounds a session runs under, from the server's settings: one definition for every place
that steps the session core for a live session (its actor, and the web worker that admits a
submit with no actor), so both apply the same ones.

`BRAIN_MAX_MODEL_CALLS`, `BRAIN_MAX_TURN_SECS`, `BRAIN_MAX_TOOL_SECS`, `BRAIN_MAX_EMITTED_BYTES`
(0: no bound), `BRAIN_SESSION_IDLE_TTL_MS` (the idle TTL of a session whose config names none)
and whether `BRAIN_WEBHOOK_URL` is set (each turn's end then owes a delivery).
"""

from __future__ import annotations

from brain.sessions.state import Limits
from brain.settings import Settings


def limits_from(settings: Settings) -> Limits:
    """The session core's `Limits` for a server configured with `settings`."""
    return Limits(max_model_calls=settings.max_model_calls,
                  max_turn_secs=settings.max_turn_secs,
                  max_tool_secs=settings.max_tool_secs,
                  max_emitted_bytes=settings.max_emitted_bytes,
                  idle_ttl_ms=settings.session_idle_ttl_ms,
                  webhooks=settings.webhook_url is not None)
