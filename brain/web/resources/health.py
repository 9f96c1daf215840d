"""Liveness and readiness probes (no auth)."""

from __future__ import annotations

import falcon

from brain import errors
from brain.agentloop.preparing import status_path, still_preparing
from brain.protocol.messages import REGISTRY_GLOBAL_NAME
from brain.settings import Settings
from brain.web.contract import Answer, operation
from brain.web.gateway import ActorGateway
from brain.web.schema import Schema

PROBE = Schema("Probe", {
    "type": "object",
    "required": ["status"],
    "properties": {"status": {"type": "string"},
                   "missing": {"type": "array", "items": {"type": "string"},
                               "description": "what is not running (not ready only)"},
                   "preparing": {"type": "array", "items": {"type": "string"},
                                 "description": "what a starting server is still preparing, "
                                 "such as Agentloops it compiles (not ready only)"}},
}, "probe answer")


class HealthResource:
    @operation("health", "Liveness", {200: Answer("Alive", PROBE)})
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"status": "ok"}


class ReadyResource:
    """Ready when every actor Brain needs answers for it: the ActorSupervisor names no shared
    actor missing (registry, executors, host dispatcher, metrics), the registry answers, and at
    least one session actor exists, warm or serving (unless BRAIN_SESSION_POOL_SIZE is 0: then
    every open forks its own), and no configured Agentloop is still being compiled at start
    (brain/agentloop/preparing.py). Otherwise 503, naming what is missing and what is still
    being prepared."""

    def __init__(self, gateway: ActorGateway) -> None:
        self.gateway = gateway
        settings = Settings.from_env()
        self.pool_size = settings.session_pool_size
        self.status = status_path(settings.data_path / "run")

    @operation("ready", "Readiness: every actor Brain needs is running",
               {200: Answer("Ready", PROBE), 503: Answer("Not ready", PROBE)})
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        missing = self.missing()
        preparing = still_preparing(self.status)
        if not missing and not preparing:
            resp.media = {"status": "ready"}
        else:
            resp.status = falcon.HTTP_503
            resp.media = {"status": "not ready", "missing": missing}
            if preparing:
                resp.media["preparing"] = preparing

    def missing(self) -> list[str]:
        from brain.actors.registry.actor import Registry

        try:
            where = self.gateway.shared_actors(timeout=PROBE_TIMEOUT_SECS)
            if where is None:
                return ["actor supervisor"]
            missing = list(where.missing)
            if "registry" in missing:
                return missing
            stats = self.gateway.ask_global(REGISTRY_GLOBAL_NAME, Registry, "stats",
                                            PROBE_TIMEOUT_SECS)
        except errors.BrainError:
            return ["actor system"]
        if not isinstance(stats, dict):
            return [*missing, "registry"]
        actors = stats.get("open_sessions", 0) + stats.get("pooled_actors", 0)
        if actors < 1 and self.pool_size > 0:  # a pool of 0 forks at each open
            missing.append("session actor")
        return missing


PROBE_TIMEOUT_SECS = 2.0
