"""GET /metrics (Prometheus text, by prometheus_client) and the web worker's own metrics."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import falcon
from prometheus_client import CONTENT_TYPE_LATEST

from brain import errors
from brain.protocol.messages import METRICS_GLOBAL_NAME, REGISTRY_GLOBAL_NAME, MetricsScrape
from brain.web.background import spawn_background
from brain.web.contract import Answer, operation
from brain.web.gateway import ActorGateway
from brain.web.live_hub import LiveHub
from brain.web.prometheus import HTTP_REQUESTS, SSE_STREAMS, render

log = logging.getLogger(__name__)

GAUGE_SECS = 2.0


class WorkerMetrics:
    """Counts this worker's requests, and every 2 s sets its gauge of open SSE streams."""

    def __init__(self, gateway: ActorGateway, hub: LiveHub) -> None:
        self.gateway = gateway
        self.hub = hub
        self._started = False
        self._lock = threading.Lock()

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         req_succeeded: bool) -> None:
        route = req.uri_template or "unmatched"
        status = resp.status if isinstance(resp.status, int) else str(resp.status).split()[0]
        HTTP_REQUESTS.labels(method=req.method, route=route, status=str(status)).inc()
        if not self._started:
            self._start()

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        spawn_background(self._gauge_forever, "metrics-gauge")

    def _gauge_forever(self) -> None:
        while True:
            try:
                SSE_STREAMS.set(self.hub.subscriber_count())
            except Exception:
                log.warning("metrics gauge failed", exc_info=True)
            time.sleep(GAUGE_SECS)


class MetricsResource:
    def __init__(self, gateway: ActorGateway) -> None:
        self.gateway = gateway

    @operation("metrics", "Metrics in the Prometheus text format",
               {200: Answer("Metrics", content={"text/plain": {"schema": {"type": "string"}}})},
               errors=(401, 403, 500))
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        from brain.actors.metrics_actor import MetricsActor
        from brain.actors.registry.actor import Registry

        stats = self.gateway.ask_global(REGISTRY_GLOBAL_NAME, Registry, "stats") or {}
        snapshot = self.gateway.ask_global(METRICS_GLOBAL_NAME, MetricsActor, MetricsScrape())
        if not isinstance(snapshot, dict):
            raise errors.Internal("metrics are not available right now")
        gauges = {"brain_session_actors_open": stats.get("open_sessions", 0),
                  "brain_turns_suspended": stats.get("suspended_turns", 0)}
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = render(snapshot, gauges)
