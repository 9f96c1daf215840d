"""GET /console: the page and its files answer without a token; the API still needs one."""

from __future__ import annotations

from pathlib import Path

import falcon
import falcon.testing
import pytest

from brain.config import BrainConfig
from brain.settings import Settings
from brain.web.app import create_app
from brain.web.live_hub import LiveHub
from brain.web.openapi import openapi_document
from brain.web.resources.console import ASSETS, CONSOLE_DIR
from tests.web.test_openapi import NoActors


@pytest.fixture
def client(tmp_path: Path) -> falcon.testing.TestClient:
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(tmp_path)})
    app = create_app(settings, BrainConfig.load(), NoActors(), "op-token",
                     hub=LiveHub(settings.data_path))
    return falcon.testing.TestClient(app)


def test_the_page_needs_no_token_and_allows_only_this_server(client):
    page = client.simulate_get("/console")
    assert page.status_code == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert page.content == (CONSOLE_DIR / "index.html").read_bytes()
    policy = page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert client.simulate_get("/console/").status_code == 200


@pytest.mark.parametrize("name", sorted(ASSETS))
def test_each_file_is_served_with_its_type(client, name):
    answer = client.simulate_get(f"/console/{name}")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == ASSETS[name]
    assert answer.content == (CONSOLE_DIR / name).read_bytes()


def test_an_unknown_file_is_the_contracts_not_found(client):
    answer = client.simulate_get("/console/secret.txt")
    assert answer.status_code == 404
    assert answer.json["error"]["code"] == "not_found"


def test_the_page_references_only_files_it_serves():
    page = (CONSOLE_DIR / "index.html").read_text()
    for name in ASSETS:
        assert f'/console/{name}' in page
    assert "http://" not in page and "https://" not in page


def test_the_api_still_needs_the_token(client):
    assert client.simulate_get("/v1/sessions").status_code == 401
    assert client.simulate_get("/consoles").status_code == 401


def test_the_document_lists_the_console_as_public(client):
    document = openapi_document(client.app)
    assert document["paths"]["/console"]["get"]["security"] == []
    assert document["paths"]["/console/{asset}"]["parameters"][0]["schema"]["enum"] == \
        sorted(ASSETS)
