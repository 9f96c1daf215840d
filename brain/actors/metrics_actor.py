"""The MetricsActor: one per actor system, merging the metric deltas of the actor processes.

Session actors and the registry send small `MetricsReport`s (counter deltas, histogram
observations); a scrape of /metrics asks this actor for the merged state's snapshot, so a
scrape never wakes a session actor, and counts survive the session actor processes that made
them. Web workers record their own metrics with prometheus_client (brain/web/prometheus.py).
"""

from __future__ import annotations

from typing import Any

from brain.actors.trace import TracedDispatcher
from brain.metrics import MetricState
from brain.protocol.messages import MetricsReport, MetricsScrape


class MetricsActor(TracedDispatcher):
    trace_name = "metrics"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state = MetricState()

    def receiveMsg_MetricsReport(self, msg: MetricsReport, sender: Any) -> None:
        self.state.merge(msg.counters, msg.observations)

    def receiveMsg_MetricsScrape(self, msg: MetricsScrape, sender: Any) -> None:
        self.send(sender, self.state.snapshot())
