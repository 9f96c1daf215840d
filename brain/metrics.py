"""The actor system's metric definitions and their merged state, free of actors and I/O.

Counters and histogram observations are accumulated where things happen (session actors, the
registry) and sent as deltas to the MetricsActor, which merges them into a `MetricState`; a
scrape of /metrics takes its `snapshot()` and prometheus_client renders it
(brain/web/prometheus.py), beside what the web workers record themselves.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from brain.protocol.records import (
    ENVIRONMENT_OP_STARTED,
    MODEL_CALL_STARTED,
    TOOL_CALL_STARTED,
    TURN_ENDED,
    TURN_FAILED,
    TURN_STARTED,
)

COUNTERS: dict[str, str] = {
    "brain_turns_total": "turns finished, by status and error code",
    "brain_effects_total": "effect terminals committed, by kind and outcome",
    "brain_journal_opens_total": "session journals opened by session actors, by how: kept (a "
                                 "writer taken up again) or recovered (a full open)",
    "brain_actor_exits_total": "actor processes that exited without being asked to (killed or "
                               "crashed), by actor; each was replaced and its work settled",
}
COMMIT_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5)
TURN_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
                600.0, 1800.0, 3600.0)
EFFECT_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                  60.0, 300.0)
WAIT_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# name → (help, bucket upper bounds)
HISTOGRAMS: dict[str, tuple[str, tuple[float, ...]]] = {
    "brain_journal_commit_seconds": ("journal commit (write + fdatasync) latency",
                                     COMMIT_BUCKETS),
    "brain_turn_duration_seconds": ("turn latency, turn_started to its end, by status "
                                    "(journal times, millisecond resolution)", TURN_BUCKETS),
    "brain_effect_duration_seconds": ("effect latency, started to its terminal record, by kind "
                                      "(journal times, millisecond resolution)", EFFECT_BUCKETS),
    "brain_admission_wait_seconds": ("time work waited for a session actor in the registry's "
                                     "admission backlog (0 when one was free)", WAIT_BUCKETS),
}

LabelKey = tuple[tuple[str, str], ...]


def label_key(**labels: Any) -> LabelKey:
    return tuple(sorted((k, str(v)) for k, v in labels.items()))


class MetricBatch:
    """Deltas collected locally and sent now and then (counters and histogram observations)."""

    def __init__(self) -> None:
        self.counters: dict[tuple[str, LabelKey], float] = {}
        self.observations: dict[tuple[str, LabelKey], list[float]] = {}

    def inc(self, name: str, amount: float = 1.0, **labels: Any) -> None:
        key = (name, label_key(**labels))
        self.counters[key] = self.counters.get(key, 0.0) + amount

    def observe(self, name: str, value: float, **labels: Any) -> None:
        self.observations.setdefault((name, label_key(**labels)), []).append(value)

    def absorb(self, counters: dict, observations: dict) -> None:
        """Add another batch's deltas (what a released session actor handed over)."""
        for key, amount in counters.items():
            self.counters[key] = self.counters.get(key, 0.0) + amount
        for key, values in observations.items():
            self.observations.setdefault(key, []).extend(values)

    def __bool__(self) -> bool:
        return bool(self.counters or self.observations)

    def take(self) -> tuple[dict, dict]:
        counters, observations = self.counters, self.observations
        self.counters, self.observations = {}, {}
        return counters, observations


class MetricState:
    """The merged view the MetricsActor keeps: counter totals, and per histogram series its
    bucket counts (not cumulative) followed by the sum and the count."""

    def __init__(self) -> None:
        self.counters: dict[tuple[str, LabelKey], float] = {}
        self.histograms: dict[tuple[str, LabelKey], list[float]] = {}

    def merge(self, counters: dict, observations: dict[Any, Iterable[float]]) -> None:
        for key, amount in counters.items():
            self.counters[key] = self.counters.get(key, 0.0) + amount
        for key, values in observations.items():
            if not isinstance(key, tuple) or key[0] not in HISTOGRAMS:
                continue  # a name this Brain does not define: nothing to render it as
            buckets = HISTOGRAMS[key[0]][1]
            state = self.histograms.setdefault(key, [0.0] * (len(buckets) + 2))
            for value in values:
                index = bisect.bisect_left(buckets, value)
                if index < len(buckets):
                    state[index] += 1
                state[-2] += value
                state[-1] += 1

    def snapshot(self) -> dict[str, dict]:
        """Plain data for a scrape (it crosses to the web worker that asked)."""
        return {"counters": dict(self.counters),
                "histograms": {key: list(state) for key, state in self.histograms.items()}}


class Latencies:
    """Start times (journal `at`, epoch ms) of this session's open turn and effects, so their
    terminal records can be observed as durations. A start this actor did not see (a turn
    admitted by a web worker, or one carried on after a suspension) is told it by `note`."""

    STARTS = frozenset({TURN_STARTED, MODEL_CALL_STARTED, TOOL_CALL_STARTED,
                        ENVIRONMENT_OP_STARTED})

    def __init__(self) -> None:
        self.starts: dict[int, int] = {}

    def note(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            if record.get("kind") in self.STARTS:
                self.starts[record["seq"]] = record["at"]

    def observe(self, batch: MetricBatch, record: dict[str, Any]) -> None:
        kind = record["kind"]
        began = self.starts.pop(record.get("started"), None)  # type: ignore[arg-type]
        if began is None:
            return
        seconds = max(record["at"] - began, 0) / 1000.0
        if kind in (TURN_ENDED, TURN_FAILED):
            batch.observe("brain_turn_duration_seconds", seconds,
                          status=kind.rsplit("_", 1)[1])
        elif not kind.startswith("activation_"):
            batch.observe("brain_effect_duration_seconds", seconds, kind=kind.rsplit("_", 1)[0])

    def clear(self) -> None:
        self.starts.clear()


def epoch_ms(rfc3339: str) -> int:
    """An Event's `at` (RFC 3339 UTC with milliseconds) as epoch milliseconds."""
    from datetime import datetime

    return round(datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() * 1000)
