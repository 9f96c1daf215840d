"""The web tier's Prometheus metrics, and the /metrics rendering with prometheus_client.

Each gunicorn worker records its own metrics (requests, open SSE streams) in prometheus_client's
multiprocess mode: the master sets PROMETHEUS_MULTIPROC_DIR (in /dev/shm, see
brain/web/multiproc.py; emptied when it starts) before any worker forks, every worker writes
its own files there, a scrape sums them with `MultiProcessCollector`, and the `child_exit` hook
marks a dead worker's gauges gone (brain/web/gunicorn_conf.py, brain/web/multiproc.py). The
actor system's metrics (turns, effects, latencies) come from the MetricsActor's snapshot,
through `ActorCollector`; the two gauges of the registry (session actors open, turns
suspended) are read from its stats.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.multiprocess import MultiProcessCollector

from brain.metrics import COUNTERS, HISTOGRAMS
from brain.web.multiproc import MULTIPROC_ENV

# Without PROMETHEUS_MULTIPROC_DIR (the app served in one process, as some tests do) the
# values live in this registry; with it, in the worker's files, and this registry is unused.
WORKER_REGISTRY = CollectorRegistry(auto_describe=False)
HTTP_REQUESTS = Counter("brain_http_requests", "HTTP requests answered, by method, route, status",
                        ("method", "route", "status"), registry=WORKER_REGISTRY)
SSE_STREAMS = Gauge("brain_sse_streams_open", "SSE streams open, summed over web workers",
                    multiprocess_mode="livesum", registry=WORKER_REGISTRY)

REGISTRY_GAUGES = {
    "brain_session_actors_open": "session actors holding a session, or released in the last "
                                 "0.25 s and not yet reported",
    "brain_turns_suspended": "turns waiting on their model or Tools with no session actor "
                             "(suspended, to resume by replay)",
}


class _Registered:
    """A registry as one collector of another (the one-process case)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        return self.registry.collect()


class ActorCollector:
    """The actor system's metrics: the MetricsActor's snapshot and the registry's gauges."""

    def __init__(self, snapshot: dict[str, dict], gauges: dict[str, float]) -> None:
        self.snapshot = snapshot
        self.gauges = gauges

    def collect(self) -> Iterator[Metric]:
        counters = self.snapshot.get("counters", {})
        for name, help_text in COUNTERS.items():
            series = sorted((key, value) for (metric, key), value in counters.items()
                            if metric == name)
            labels = [k for k, _ in series[0][0]] if series else []
            family = CounterMetricFamily(name, help_text, labels=labels)
            for key, value in series:
                family.add_metric([v for _, v in key], value)
            yield family
        histograms = self.snapshot.get("histograms", {})
        for name, (help_text, bounds) in HISTOGRAMS.items():
            series = sorted((key, state) for (metric, key), state in histograms.items()
                            if metric == name)
            labels = [k for k, _ in series[0][0]] if series else []
            family = HistogramMetricFamily(name, help_text, labels=labels)
            for key, state in series:
                family.add_metric([v for _, v in key], _cumulative(bounds, state), state[-2])
            if not series and not labels:  # an unlabelled histogram shows its zeros
                family.add_metric([], _cumulative(bounds, [0.0] * (len(bounds) + 2)), 0.0)
            yield family
        for name, help_text in REGISTRY_GAUGES.items():
            yield GaugeMetricFamily(name, help_text, value=self.gauges.get(name, 0))


def _cumulative(bounds: tuple[float, ...], state: list[float]) -> list[tuple[str, float]]:
    running, buckets = 0.0, []
    for bound, count in zip(bounds, state, strict=False):
        running += count
        buckets.append((repr(float(bound)), running))
    buckets.append(("+Inf", state[-1]))
    return buckets


def render(snapshot: dict[str, Any], gauges: dict[str, float]) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    if os.environ.get(MULTIPROC_ENV):
        MultiProcessCollector(registry)
    else:
        registry.register(_Registered(WORKER_REGISTRY))  # type: ignore[arg-type]
    registry.register(ActorCollector(snapshot, gauges))  # type: ignore[arg-type]
    return generate_latest(registry)
