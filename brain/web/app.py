"""The Falcon application: routes of docs/http-api.md mapped to resource classes.

Each responder declares its contract (brain/web/contract.py); the OpenAPI document is generated
from these routes and published at /openapi.json.
"""

from __future__ import annotations

import falcon

from brain.config import BrainConfig
from brain.operator_token import read_operator_token
from brain.settings import Settings
from brain.tracing import otel
from brain.web import errors as web_errors
from brain.web.forwarding import ForwardingMiddleware
from brain.web.gateway import ActorGateway
from brain.web.idempotency_middleware import IdempotencyMiddleware
from brain.web.live_hub import LiveHub
from brain.web.members import Convention
from brain.web.middleware import AuthMiddleware, DrainMiddleware, RequestIdMiddleware
from brain.web.openapi import OpenApiResource, openapi_document
from brain.web.otel_middleware import OtelMiddleware
from brain.web.resources.console import ConsoleAssetResource, ConsolePageResource
from brain.web.resources.forks import ForksResource
from brain.web.resources.health import HealthResource, ReadyResource
from brain.web.resources.history import EventsResource, TranscriptResource
from brain.web.resources.host import HostCallResource, HostPollResource
from brain.web.resources.lifecycle import CancelResource, EndResource, TokensResource
from brain.web.resources.messages import MessagesResource
from brain.web.resources.metrics import MetricsResource, WorkerMetrics
from brain.web.resources.replays import ReplaysResource
from brain.web.resources.sessions import SessionResource, SessionsResource


def create_app(settings: Settings, config: BrainConfig, gateway: ActorGateway,
               operator_token: str, hub: LiveHub | None = None) -> falcon.App:
    if hub is None:
        hub = LiveHub(settings.data_path)
        hub.start()
    worker_metrics = WorkerMetrics(gateway, hub)
    convention = Convention(settings, gateway) if settings.member is not None else None
    app = falcon.App(
        # process_resource runs in this order, so a request is authenticated and admitted
        # before its Idempotency-Key is claimed; the claim must be the last step before work.
        # A request about another member's session is forwarded before all of that.
        middleware=[RequestIdMiddleware(),
                    *([OtelMiddleware()] if otel.enabled() else []),  # BRAIN_OTEL
                    *([ForwardingMiddleware(convention)] if convention is not None else []),
                    AuthMiddleware(operator_token, settings.sessions_path),
                    DrainMiddleware(settings.data_path), worker_metrics,
                    IdempotencyMiddleware(settings)],
    )
    app.req_options.strip_url_path_trailing_slash = True
    web_errors.install(app)
    app.add_route("/healthz", HealthResource())
    app.add_route("/readyz", ReadyResource(gateway))
    app.add_route("/metrics", MetricsResource(gateway))
    app.add_route("/console", ConsolePageResource())
    app.add_route("/console/{asset}", ConsoleAssetResource())
    app.add_route("/v1/sessions", SessionsResource(settings, config, gateway, convention))
    app.add_route("/v1/sessions/{session_id}", SessionResource(settings, gateway))
    app.add_route("/v1/sessions/{session_id}/messages", MessagesResource(settings, gateway))
    app.add_route("/v1/sessions/{session_id}/events", EventsResource(settings, hub))
    app.add_route("/v1/sessions/{session_id}/transcript", TranscriptResource(settings))
    app.add_route("/v1/sessions/{session_id}/cancel", CancelResource(settings, gateway))
    app.add_route("/v1/sessions/{session_id}/end", EndResource(settings, gateway))
    app.add_route("/v1/sessions/{session_id}/tokens", TokensResource(settings))
    app.add_route("/v1/sessions/{session_id}/replays", ReplaysResource(settings, config))
    app.add_route("/v1/sessions/{session_id}/forks", ForksResource(settings, gateway))
    app.add_route("/v1/host/poll", HostPollResource(config, gateway))
    app.add_route("/v1/host/calls/{call_id}", HostCallResource(gateway))
    document = OpenApiResource()
    app.add_route("/openapi.json", document)
    document.publish(openapi_document(app, config))  # fails here for an undeclared responder
    return app


def create_app_from_env() -> falcon.App:
    settings = Settings.from_env()
    config = BrainConfig.load(settings.config)
    return create_app(settings, config, ActorGateway(settings), read_operator_token(settings))
