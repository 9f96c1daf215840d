"""The MetricsActor: one per actor system, merging metric deltas from every process.

Web workers and session actors send small `MetricsReport`s (deltas and gauges); a scrape of
/metrics asks this actor for the merged text, so a scrape never wakes a session actor and
counts from every worker and actor process appear together.
"""

from __future__ import annotations

import time
from typing import Any

from brain.actors.messages import MetricsReport, MetricsScrape
from brain.actors.trace import TracedDispatcher
from brain.metrics import MetricState, render

GAUGE_STALE_SECS = 30.0


class MetricsActor(TracedDispatcher):
    trace_name = "metrics"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state = MetricState()
        self.gauge_seen: dict[tuple[str, str], float] = {}

    def receiveMsg_MetricsReport(self, msg: MetricsReport, sender: Any) -> None:
        self.state.merge(msg.counters, msg.observations)
        now = time.monotonic()
        for name, value in msg.gauges.items():
            self.state.set_gauge(name, value, source=msg.source)
            self.gauge_seen[(name, msg.source)] = now

    def receiveMsg_MetricsScrape(self, msg: MetricsScrape, sender: Any) -> None:
        now = time.monotonic()
        for (name, source), seen in list(self.gauge_seen.items()):
            if now - seen > GAUGE_STALE_SECS:  # a worker that died stops counting
                self.state.set_gauge(name, 0.0, source=source)
                del self.gauge_seen[(name, source)]
        self.state.set_gauge("brain_session_actors_open", msg.session_actors_open,
                             source="registry")
        self.state.set_gauge("brain_turns_suspended", msg.turns_suspended, source="registry")
        self.send(sender, render(self.state))
