"""Liveness and readiness probes (no auth)."""

from __future__ import annotations

import falcon

from brain.web.gateway import ActorGateway


class HealthResource:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"status": "ok"}


class ReadyResource:
    def __init__(self, gateway: ActorGateway) -> None:
        self.gateway = gateway

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self.gateway.ping():
            resp.media = {"status": "ready"}
        else:
            resp.status = falcon.HTTP_503
            resp.media = {"status": "not ready"}
