"""What restart records for work a crash interrupted (docs/concepts.md, "Suspension and recovery").

A pure function of the projection, so it is tested without disk or actors. Nothing here reruns
anything: each started effect with no terminal becomes an ambiguous failure (`unknown`), the
interrupted activation and turn fail with `interrupted`, an interrupted creation fails the
session, and an interrupted ending is closed.
"""

from __future__ import annotations

from typing import Any

INTERRUPTED = {"code": "interrupted", "message": "the server stopped while this was in flight"}

_TERMINAL_FOR = {
    "model_call_started": "model_call_failed",
    "tool_call_started": "tool_call_failed",
    "environment_op_started": "environment_op_failed",
}


def interrupted_work(projection: Any) -> list[dict[str, Any]]:
    """The records to commit, in order, before the session accepts anything new."""
    records: list[dict[str, Any]] = []
    for started, started_kind in sorted(projection.unfinished_effects.items()):
        if started_kind == "activation_started":
            continue
        terminal = _TERMINAL_FOR.get(started_kind)
        if terminal is None:
            continue
        record: dict[str, Any] = {"kind": terminal, "started": started,
                                  "error": dict(INTERRUPTED), "outcome": "unknown"}
        if terminal == "tool_call_failed":
            record["result"] = {"content": INTERRUPTED["message"], "is_error": True}
        records.append(record)
    if projection.open_activation is not None:
        records.append({"kind": "activation_failed", "started": projection.open_activation,
                        "error": dict(INTERRUPTED)})
    if projection.open_turn is not None:
        records.append({"kind": "turn_failed", "started": projection.open_turn,
                        "error": dict(INTERRUPTED)})
    if projection.status == "creating":
        records.append({"kind": "session_failed",
                        "error": {"code": "creation", "message": INTERRUPTED["message"]}})
    elif projection.status == "ending":
        records.append({"kind": "session_ended"})
    return records
