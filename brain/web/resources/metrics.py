"""GET /metrics (Prometheus text) and the web worker's own counters."""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

import falcon

from brain import errors
from brain.actors.messages import (
    METRICS_GLOBAL_NAME,
    REGISTRY_GLOBAL_NAME,
    MetricsReport,
    MetricsScrape,
)
from brain.metrics import MetricBatch
from brain.web.background import spawn_background
from brain.web.contract import Answer, operation
from brain.web.gateway import ActorGateway
from brain.web.live_hub import LiveHub

log = logging.getLogger(__name__)

FLUSH_SECS = 2.0
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class WorkerMetrics:
    """Counts this worker's requests and sends them, with its open SSE streams, every 2 s."""

    def __init__(self, gateway: ActorGateway, hub: LiveHub) -> None:
        self.gateway = gateway
        self.hub = hub
        self.batch = MetricBatch()
        self._started = False
        self._lock = threading.Lock()

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         req_succeeded: bool) -> None:
        route = req.uri_template or "unmatched"
        status = resp.status if isinstance(resp.status, int) else str(resp.status).split()[0]
        self.batch.inc("brain_http_requests_total", method=req.method, route=route,
                       status=status)
        if not self._started:
            self._start()

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        spawn_background(self._flush_forever, "metrics-flush")

    def _flush_forever(self) -> None:
        from brain.actors.metrics_actor import MetricsActor

        source = f"web-{os.getpid()}"
        while True:
            time.sleep(FLUSH_SECS)
            counters, observations = self.batch.take()
            report = MetricsReport(source, counters, observations,
                                   {"brain_sse_streams_open": self.hub.subscriber_count()})
            try:
                self.gateway.tell_global(METRICS_GLOBAL_NAME, MetricsActor, report)
            except Exception:
                log.warning("metrics flush failed", exc_info=True)


class MetricsResource:
    def __init__(self, gateway: ActorGateway) -> None:
        self.gateway = gateway

    @operation("metrics", "Metrics in the Prometheus text format",
               {200: Answer("Metrics", content={"text/plain": {"schema": {"type": "string"}}})},
               errors=(401, 403, 500))
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        from brain.actors.metrics_actor import MetricsActor
        from brain.actors.registry import Registry

        stats = self.gateway.ask_global(REGISTRY_GLOBAL_NAME, Registry, "stats") or {}
        text = self.gateway.ask_global(METRICS_GLOBAL_NAME, MetricsActor,
                                       MetricsScrape(stats.get("open_sessions", 0),
                                                     stats.get("suspended_turns", 0)))
        if not isinstance(text, str):
            raise errors.Internal("metrics are not available right now")
        resp.content_type = PROMETHEUS_TEXT
        resp.text = text
