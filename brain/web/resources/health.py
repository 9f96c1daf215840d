"""Liveness and readiness probes (no auth)."""

from __future__ import annotations

import falcon

from brain.web.contract import Answer, operation
from brain.web.gateway import ActorGateway
from brain.web.schema import Schema

PROBE = Schema("Probe", {
    "type": "object",
    "required": ["status"],
    "properties": {"status": {"type": "string"}},
}, "probe answer")


class HealthResource:
    @operation("health", "Liveness", {200: Answer("Alive", PROBE)})
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"status": "ok"}


class ReadyResource:
    def __init__(self, gateway: ActorGateway) -> None:
        self.gateway = gateway

    @operation("ready", "Readiness: the actor system answers",
               {200: Answer("Ready", PROBE), 503: Answer("Not ready", PROBE)})
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self.gateway.ping():
            resp.media = {"status": "ready"}
        else:
            resp.status = falcon.HTTP_503
            resp.media = {"status": "not ready"}
