"""The OpenAPI document: valid, generated from the routes the app really serves."""

from __future__ import annotations

import json
from pathlib import Path

import falcon
import falcon.testing
import pytest

from brain.config import BrainConfig
from brain.errors import BY_CODE
from brain.settings import Settings
from brain.web.app import create_app
from brain.web.contract import Answer, operation
from brain.web.live_hub import LiveHub
from brain.web.openapi import OpenApiResource, openapi_document
from brain.web.schema import Schema


class NoActors:
    """A gateway stand-in: building routes never talks to actors."""

    def ping(self, timeout: float = 2.0) -> bool:
        return True

    def request(self, *args: object, **kwargs: object) -> dict:
        raise AssertionError("no actor calls in these tests")

    def tell_global(self, *args: object) -> None:
        """The worker's metrics flush (every 2 s, from a thread) has nowhere to go here."""


@pytest.fixture
def app(tmp_path: Path) -> falcon.App:
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(tmp_path)})
    return create_app(
        settings, BrainConfig.load(), NoActors(), "op-token", hub=LiveHub(settings.data_path)
    )


def documented_routes(document: dict) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in document["paths"].items()
            for method in item if method != "parameters"}


def test_document_is_valid_openapi(app: falcon.App) -> None:
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(openapi_document(app))
    validator.validate(openapi_document(app, BrainConfig.load()))


def test_contract_routes_are_all_documented(app: falcon.App) -> None:
    sid = "/v1/sessions/{session_id}"
    assert documented_routes(openapi_document(app)) == {
        ("POST", "/v1/sessions"), ("GET", "/v1/sessions"),
        ("GET", sid), ("DELETE", sid),
        ("POST", f"{sid}/messages"), ("GET", f"{sid}/events"), ("GET", f"{sid}/transcript"),
        ("POST", f"{sid}/cancel"), ("POST", f"{sid}/end"), ("POST", f"{sid}/tokens"),
        ("POST", f"{sid}/forks"), ("POST", f"{sid}/replays"),
        ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"), ("GET", "/openapi.json"),
        ("POST", "/v1/host/poll"), ("POST", "/v1/host/calls/{call_id}"),
        ("GET", "/console"), ("GET", "/console/{asset}"),
    }  # fmt: skip


class Undeclared:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {}


class Declared:
    idempotent = {"POST": "create"}

    @operation("make", "Make one", {201: Answer("Made", Schema("Made", {"type": "object"}))},
               errors=(400, 409), body={"type": "object"}, body_limit=1 << 20)
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.status = falcon.HTTP_201


def test_a_responder_without_a_declaration_cannot_be_served(tmp_path: Path) -> None:
    """The document is generated at app creation, so a route nobody described never starts."""
    app = falcon.App()
    app.add_route("/declared", Declared())
    app.add_route("/undeclared", Undeclared())
    with pytest.raises(LookupError, match="GET /undeclared has no @operation declaration"):
        openapi_document(app)


def test_a_declaration_becomes_the_operation(tmp_path: Path) -> None:
    app = falcon.App()
    app.add_route("/declared", Declared())
    document = openapi_document(app)
    op = document["paths"]["/declared"]["post"]
    assert op["operationId"] == "make"
    assert op["parameters"] == [{"$ref": "#/components/parameters/IdempotencyKey"}]
    assert op["requestBody"]["description"] == "At most 1 MiB; application/json."
    assert op["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Made"}
    assert op["responses"]["409"] == {"$ref": "#/components/responses/E409"}
    assert document["components"]["schemas"]["Made"] == {"type": "object"}


def test_error_responses_come_from_the_error_types(app: falcon.App) -> None:
    components = openapi_document(app)["components"]
    statuses = {cls.status for cls in BY_CODE.values()}
    assert set(components["responses"]) == {f"E{status}" for status in statuses}
    for code, cls in BY_CODE.items():
        assert code in components["responses"][f"E{cls.status}"]["description"]
    error = components["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
    assert error["enum"] == sorted(BY_CODE)


def test_probes_and_console_are_public_and_everything_else_needs_the_bearer(
        app: falcon.App) -> None:
    document = openapi_document(app)
    assert document["security"] == [{"bearer": []}]
    for path, item in document["paths"].items():
        for method, op in item.items():
            if method == "parameters":
                continue
            public = op.get("security") == []
            assert public == (path in {"/healthz", "/readyz", "/console", "/console/{asset}"}), \
                (method, path)
            if not public:
                assert "401" in op["responses"], (method, path)


def test_idempotent_routes_take_the_key(app: falcon.App) -> None:
    document = openapi_document(app)
    keyed = {(method.upper(), path) for path, item in document["paths"].items()
             for method, op in item.items() if method != "parameters"
             and {"$ref": "#/components/parameters/IdempotencyKey"} in op.get("parameters", [])}
    sid = "/v1/sessions/{session_id}"
    assert keyed == {("POST", "/v1/sessions"), ("DELETE", sid), ("POST", f"{sid}/messages"),
                     ("POST", f"{sid}/cancel"), ("POST", f"{sid}/end"),
                     ("POST", f"{sid}/forks")}


def test_configured_names_are_enumerated(app: falcon.App) -> None:
    config = BrainConfig.load()
    body = openapi_document(app, config)["components"]["schemas"]["CreateBody"]["properties"]
    assert body["model"]["enum"] == [*sorted(config.models), None]  # null = the default
    assert body["tools"]["items"]["enum"] == sorted(config.tools)
    plain = openapi_document(app)["components"]["schemas"]["CreateBody"]["properties"]
    assert "enum" not in plain["model"]
    assert not any(key.startswith("x-") for key in json.dumps(plain).split('"'))


def test_openapi_resource_serves_the_document(app: falcon.App) -> None:
    result = falcon.testing.TestClient(app).simulate_get(
        "/openapi.json", headers={"Authorization": "Bearer op-token"})
    assert result.status_code == 200
    assert result.headers["Content-Type"].startswith("application/json")
    assert json.loads(result.text) == openapi_document(app, BrainConfig.load())


def test_an_unpublished_document_is_an_internal_error() -> None:
    app = falcon.App()
    app.add_route("/openapi.json", OpenApiResource())
    assert falcon.testing.TestClient(app).simulate_get("/openapi.json").status_code == 500


def test_the_document_says_what_the_server_answers(app: falcon.App) -> None:
    """Disagreements a fuzzer found: each now says what the server does."""
    document = openapi_document(app, BrainConfig.load())
    schemas, paths = document["components"]["schemas"], document["paths"]
    # A poll body that names no host part is refused, so the document does not call it valid.
    assert {tuple(alt["required"]) for alt in schemas["HostPollBody"]["anyOf"]} \
        == {("tools",), ("environments",)}
    # A replay reads a body like any other route: too large or not JSON is answered.
    replay = paths["/v1/sessions/{session_id}/replays"]["post"]["responses"]
    assert {"400", "413", "415"} <= set(replay)
    agentloop = schemas["ReplayBody"]["properties"]["agentloop"]
    assert agentloop["enum"] == sorted(BrainConfig.load().agentloops)
    # Preferences other than respond-async are ignored, not refused.
    assert "enum" not in document["components"]["parameters"]["Prefer"]["schema"]
