"""Lower limits a session, or one of its turns, asks for: checked, recorded, applied.

A deployment's `BRAIN_MAX_TURN_SECS` and `BRAIN_MAX_MODEL_CALLS` are ceilings. A create body may
ask for lower ones under `limits` (a developer trying a new Agentloop wants a runaway loop cut
off in seconds, not in half an hour), and a message body may ask for lower ones still for its
own turn. Asking for a higher one than applies is refused (400), never quietly clamped: the
caller would otherwise believe in a bound it does not have.

The session's effective limits at creation are recorded in its configuration
(`session_created.config.limits`, both keys, 0 meaning no bound as everywhere), so its view
shows them; a turn's own ask is recorded on its `turn_started`. Every activation runs under the
tightest of the deployment's current limits, the session's and the turn's, so a later, lower
deployment limit still applies to an old session, and a higher one does not loosen it.

Pure: no settings, no disk; the callers hand in the deployment's `Limits`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from brain.errors import InvalidRequest
from brain.sessions.state import Limits

# What may be asked for, and the setting each is bounded by.
ASKABLE = {"max_turn_secs": "BRAIN_MAX_TURN_SECS", "max_model_calls": "BRAIN_MAX_MODEL_CALLS"}
LIMITS_FIELD = "limits"


def check_asked(asked: Any, ceiling: dict[str, int | float], where: str) -> dict[str, int]:
    """The limits `asked` for (a body's `limits` object, or None), each a positive integer no
    higher than `ceiling` (a bound of 0 there is none). Raises InvalidRequest naming the field.

    `where` names what bounds the ask in the refusal ("this server's", "the session's")."""
    if asked is None:
        return {}
    if not isinstance(asked, dict):
        raise InvalidRequest(f"{LIMITS_FIELD}: expected object")
    checked = {}
    for name, value in asked.items():
        if name not in ASKABLE:
            raise InvalidRequest(f"{LIMITS_FIELD}.{name}: unknown limit (one of "
                                 f"{', '.join(ASKABLE)})")
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidRequest(f"{LIMITS_FIELD}.{name}: expected a positive integer")
        bound = ceiling.get(name) or 0
        if bound and value > bound:
            raise InvalidRequest(
                f"{LIMITS_FIELD}.{name}: {value} is above {where} limit of {bound:g} "
                f"({ASKABLE[name]}); a session or a turn may only ask for a lower one")
        checked[name] = value
    return checked


def deployment_ceiling(limits: Limits) -> dict[str, int | float]:
    """The askable limits of a deployment, by name."""
    return {name: getattr(limits, name) for name in ASKABLE}


def session_limits(asked: Any, deployment: Limits) -> dict[str, int | float]:
    """What a create body's `limits` makes the session's: recorded in its configuration."""
    ceiling = deployment_ceiling(deployment)
    return {**ceiling, **check_asked(asked, ceiling, "this server's")}


def session_ceiling(config: dict[str, Any] | None, deployment: Limits) -> dict[str, int | float]:
    """The limits a turn of the session with `config` may ask under: its recorded ones, never
    looser than the deployment's now."""
    effective = effective_limits(deployment, config, None)
    return deployment_ceiling(effective)


def effective_limits(deployment: Limits, config: dict[str, Any] | None,
                     turn_asked: dict[str, Any] | None) -> Limits:
    """The tightest of the deployment's limits, the session's recorded ones (a session created
    before limits were recorded has none) and the turn's own."""
    tightest = {name: getattr(deployment, name) for name in ASKABLE}
    for bounds in ((config or {}).get(LIMITS_FIELD), turn_asked):
        for name, value in (bounds or {}).items():
            if name in tightest and isinstance(value, (int, float)) and value:
                tightest[name] = value if not tightest[name] else min(tightest[name], value)
    return replace(deployment, **tightest)
