"""`brain trace --check`: the commit-before-send rule, proved from a trace alone.

An effect message (RunModelCall, RunToolCall, RunEnvironmentOp, HostCallOffer, DeliverWebhook)
names the sequence of its `*_started` (or `webhook_delivery_pending`) record (`fenced_by`). The
rule holds when, for every such send, the same session's "commit" line holding that sequence
comes earlier on the shared monotonic clock.
"""

from __future__ import annotations

from typing import Any

from brain.tracing.lines import EFFECT_MESSAGES


def first_violation(lines: list[dict[str, Any]]) -> str | None:
    """A sentence naming the first effect sent before (or without) its commit; None if none."""
    committed: dict[tuple[str, int], int] = {}
    for line in lines:  # in time order
        if line.get("dir") == "commit":
            for seq in line.get("seqs", []):
                committed.setdefault((line.get("session_id"), seq), line["t_us"])
    for line in lines:
        if line.get("dir") != "send" or line.get("msg") not in EFFECT_MESSAGES:
            continue
        session, fence = line.get("session_id"), line.get("fenced_by")
        where = (f"line {line.get('line', '?')}: {line.get('kind', 'actor')} sent {line['msg']}"
                 f" of session {session}")
        if fence is None:
            return f"{where} naming no *_started sequence"
        at = committed.get((session, fence))
        if at is None:
            return f"{where} fenced by sequence {fence}, which no commit line holds"
        if at > line["t_us"]:
            return (f"{where} fenced by sequence {fence} {at - line['t_us']} µs before that "
                    "sequence was committed")
    return None


def effect_sends(lines: list[dict[str, Any]]) -> int:
    return sum(1 for line in lines
               if line.get("dir") == "send" and line.get("msg") in EFFECT_MESSAGES)
