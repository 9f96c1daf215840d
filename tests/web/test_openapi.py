"""The OpenAPI document: valid, complete, and in step with the routes the app really serves."""

from __future__ import annotations

import json
from pathlib import Path

import falcon
import falcon.testing
import pytest

from brain.config import CREATE_FIELDS, BrainConfig
from brain.errors import BY_CODE
from brain.settings import Settings
from brain.web.app import create_app
from brain.web.live_hub import LiveHub
from brain.web.openapi import (
    ERROR_CODES,
    OpenApiResource,
    check_routes,
    documented_routes,
    openapi_document,
)


class NoActors:
    """A gateway stand-in: building routes never talks to actors."""

    def ping(self, timeout: float = 2.0) -> bool:
        return True

    def request(self, *args: object, **kwargs: object) -> dict:
        raise AssertionError("no actor calls in these tests")


@pytest.fixture
def app(tmp_path: Path) -> falcon.App:
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(tmp_path)})
    return create_app(
        settings, BrainConfig.load(), NoActors(), "op-token", hub=LiveHub(settings.data_path)
    )


def test_document_matches_the_served_routes(app: falcon.App) -> None:
    mismatches = check_routes(app)
    assert mismatches == []


def test_check_routes_reports_drift(app: falcon.App) -> None:
    document = openapi_document()
    del document["paths"]["/v1/sessions/{session_id}/transcript"]
    document["paths"]["/v1/nowhere"] = {"get": {"responses": {"200": {"description": "x"}}}}
    mismatches = check_routes(app, document)
    assert "served but not documented: GET /v1/sessions/{session_id}/transcript" in mismatches
    assert "documented but not served: GET /v1/nowhere" in mismatches


def test_document_is_valid_openapi() -> None:
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(openapi_document())
    validator.validate(openapi_document(BrainConfig.load()))


def test_contract_routes_are_all_documented() -> None:
    sid = "/v1/sessions/{session_id}"
    assert documented_routes(openapi_document()) == {
        ("POST", "/v1/sessions"), ("GET", "/v1/sessions"),
        ("GET", sid), ("DELETE", sid),
        ("POST", f"{sid}/messages"), ("GET", f"{sid}/events"), ("GET", f"{sid}/transcript"),
        ("POST", f"{sid}/cancel"), ("POST", f"{sid}/end"), ("POST", f"{sid}/tokens"),
        ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"), ("GET", "/openapi.json"),
        ("POST", "/v1/host/poll"), ("POST", "/v1/host/calls/{call_id}"),
    }  # fmt: skip


def test_error_codes_and_create_fields_follow_the_code() -> None:
    """The document's enums are copies; these catch a code or field added in one place only."""
    document = openapi_document()
    assert set(ERROR_CODES) == set(BY_CODE)
    schemas = document["components"]["schemas"]
    assert set(schemas["CreateBody"]["properties"]) == set(CREATE_FIELDS)
    assert schemas["CreateBody"]["additionalProperties"] is False
    assert schemas["MessageBody"]["additionalProperties"] is False


def test_probes_are_public_and_everything_else_needs_the_bearer() -> None:
    document = openapi_document()
    assert document["security"] == [{"bearer": []}]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            public = operation.get("security") == []
            assert public == (path in {"/healthz", "/readyz"}), (method, path)
            if not public:
                assert "401" in operation["responses"], (method, path)


def test_configured_names_are_enumerated() -> None:
    config = BrainConfig.load()
    body = openapi_document(config)["components"]["schemas"]["CreateBody"]["properties"]
    assert body["model"]["enum"] == [*sorted(config.models), None]  # null = the default
    assert body["tools"]["items"]["enum"] == sorted(config.tools)
    assert (
        "enum"
        not in openapi_document()["components"]["schemas"]["CreateBody"]["properties"]["model"]
    )


def test_openapi_resource_serves_the_document() -> None:
    app = falcon.App()
    app.add_route("/openapi.json", OpenApiResource())
    result = falcon.testing.TestClient(app).simulate_get("/openapi.json")
    assert result.status_code == 200
    assert result.headers["Content-Type"].startswith("application/json")
    assert json.loads(result.text) == openapi_document()
