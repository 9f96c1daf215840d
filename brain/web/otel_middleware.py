"""BRAIN_OTEL: a span per HTTP request (brain/tracing/otel.py), installed only when it is on.

A client's W3C `traceparent` header makes the request span its child, so the turn the request
runs continues the client's trace. The span names the route template, never the path's values
nor any body; it carries the request id and the session id.
"""

from __future__ import annotations

from typing import Any

import falcon

from brain.tracing import otel


class OtelMiddleware:
    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.otel_span = otel.start(
            req.method, req.get_header("traceparent"),
            {"http.request.method": req.method,
             "brain.request_id": getattr(req.context, "request_id", None) or ""},
            kind="SERVER")

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        span = getattr(req.context, "otel_span", None)
        if span is None:
            return
        route = req.uri_template or ""
        span.update_name(f"{req.method} {route}")
        span.set_attribute("http.route", route)
        if params.get("session_id"):
            span.set_attribute("brain.session_id", params["session_id"])

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         req_succeeded: bool) -> None:
        span = getattr(req.context, "otel_span", None)
        if span is None:
            return
        req.context.otel_span = None
        status = resp.status_code if hasattr(resp, "status_code") else int(str(resp.status)[:3])
        otel.end(span, {"http.response.status_code": status},
                 error=str(status) if status >= 500 else None)
