"""Metric definitions and Prometheus text rendering, free of actors and I/O.

Counters and histograms are accumulated where things happen (web workers, session actors) and
sent as deltas to the MetricsActor, which merges them with `merge_into`; `render` turns the
merged state into the Prometheus text exposition format.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

# name → (type, help)
DEFINITIONS: dict[str, tuple[str, str]] = {
    "brain_http_requests_total": ("counter", "HTTP requests answered, by method, route, status"),
    "brain_turns_total": ("counter", "turns finished, by status and error code"),
    "brain_effects_total": ("counter", "effect terminals committed, by kind and outcome"),
    "brain_journal_commit_seconds": ("histogram", "journal commit (write + fdatasync) latency"),
    "brain_sse_streams_open": ("gauge", "SSE streams open, summed over web workers"),
    "brain_session_actors_open": ("gauge", "session actors holding a session, or released "
                                  "in the last 0.25 s and not yet reported"),
    "brain_turns_suspended": ("gauge", "turns waiting on their model or Tools with no session "
                              "actor (suspended, to resume by replay)"),
}
COMMIT_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5)

LabelKey = tuple[tuple[str, str], ...]


def label_key(**labels: Any) -> LabelKey:
    return tuple(sorted((k, str(v)) for k, v in labels.items()))


class MetricBatch:
    """Deltas collected locally and sent now and then (counters and histogram observations)."""

    def __init__(self) -> None:
        self.counters: dict[tuple[str, LabelKey], float] = {}
        self.observations: dict[str, list[float]] = {}

    def inc(self, name: str, amount: float = 1.0, **labels: Any) -> None:
        key = (name, label_key(**labels))
        self.counters[key] = self.counters.get(key, 0.0) + amount

    def observe(self, name: str, value: float) -> None:
        self.observations.setdefault(name, []).append(value)

    def absorb(self, counters: dict, observations: dict[str, list[float]]) -> None:
        """Add another batch's deltas (what a released session actor handed over)."""
        for key, amount in counters.items():
            self.counters[key] = self.counters.get(key, 0.0) + amount
        for name, values in observations.items():
            self.observations.setdefault(name, []).extend(values)

    def __bool__(self) -> bool:
        return bool(self.counters or self.observations)

    def take(self) -> tuple[dict, dict]:
        counters, observations = self.counters, self.observations
        self.counters, self.observations = {}, {}
        return counters, observations


class MetricState:
    """The merged view the MetricsActor keeps."""

    def __init__(self) -> None:
        self.counters: dict[tuple[str, LabelKey], float] = {}
        self.histograms: dict[str, list[float]] = {}  # bucket counts + [sum, count]
        self.gauges: dict[tuple[str, LabelKey], float] = {}

    def merge(self, counters: dict, observations: dict[str, Iterable[float]]) -> None:
        for key, amount in counters.items():
            self.counters[key] = self.counters.get(key, 0.0) + amount
        for name, values in observations.items():
            state = self.histograms.setdefault(name, [0.0] * (len(COMMIT_BUCKETS) + 2))
            for value in values:
                index = bisect.bisect_left(COMMIT_BUCKETS, value)
                if index < len(COMMIT_BUCKETS):
                    state[index] += 1
                state[-2] += value
                state[-1] += 1

    def set_gauge(self, name: str, value: float, **labels: Any) -> None:
        self.gauges[(name, label_key(**labels))] = value


def _labels(key: LabelKey, extra: dict[str, str] | None = None) -> str:
    pairs = list(key) + sorted((extra or {}).items())
    if not pairs:
        return ""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def render(state: MetricState) -> str:
    lines: list[str] = []
    for name, (kind, help_text) in DEFINITIONS.items():
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        if kind == "counter":
            for (metric, key), value in sorted(state.counters.items()):
                if metric == name:
                    lines.append(f"{name}{_labels(key)} {value:g}")
        elif kind == "gauge":
            total: dict[LabelKey, float] = {}
            for (metric, key), value in state.gauges.items():
                if metric == name:
                    visible = tuple(p for p in key if p[0] != "source")
                    total[visible] = total.get(visible, 0.0) + value
            if not total:
                total[()] = 0.0
            for key, value in sorted(total.items()):
                lines.append(f"{name}{_labels(key)} {value:g}")
        else:
            buckets = state.histograms.get(name, [0.0] * (len(COMMIT_BUCKETS) + 2))
            running = 0.0
            for bound, count in zip(COMMIT_BUCKETS, buckets, strict=False):
                running += count
                lines.append(f'{name}_bucket{{le="{bound:g}"}} {running:g}')
            lines.append(f'{name}_bucket{{le="+Inf"}} {buckets[-1]:g}')
            lines.append(f"{name}_sum {buckets[-2]:g}")
            lines.append(f"{name}_count {buckets[-1]:g}")
    return "\n".join(lines) + "\n"
