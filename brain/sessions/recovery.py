"""What restart records for work a crash interrupted (docs/concepts.md, "Suspension and recovery").

A pure function of the projection, so it is tested without disk or actors. Nothing here reruns
anything: each started effect with no terminal becomes an ambiguous failure (`unknown`), the
interrupted activation and turn fail with `interrupted`, an interrupted creation fails the
session, and an interrupted ending is closed.
"""

from __future__ import annotations

from typing import Any

from brain.effects import Outcome
from brain.protocol.records import EFFECTS, effect_of
from brain.sessions import records
from brain.sessions.records import Record

INTERRUPTED = {"code": "interrupted",
               "message": "the server, or the process that ran this, stopped while it was in "
                          "flight"}


def interrupted_work(projection: Any) -> list[Record]:
    """The records to commit, in order, before the session accepts anything new."""
    out: list[Record] = []
    for started, started_kind in sorted(projection.unfinished_effects.items()):
        effect = effect_of(started_kind)
        if effect in EFFECTS:  # the activation is closed below, with its turn
            out.append(records.effect_failed(effect, started, Outcome.UNKNOWN,
                                             dict(INTERRUPTED)))
    if projection.open_activation is not None:
        out.append(records.activation_failed(projection.open_activation, dict(INTERRUPTED)))
    if projection.open_turn is not None:
        out.append(records.turn_failed(projection.open_turn, dict(INTERRUPTED)))
    if projection.status == "creating":
        out.append(records.session_failed("creation", INTERRUPTED["message"]))
    elif projection.status == "ending":
        out.append(records.session_ended())
    return out
