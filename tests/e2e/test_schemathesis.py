"""Property-based fuzzing of the live HTTP API against its own OpenAPI document.

A real `brain serve` answers requests schemathesis generates from `openapi_document()` of an
app built like the server's, with nothing live behind it (the cases are drawn at collection,
before any server runs; `test_the_served_document_is_the_fuzzed_one` checks the two agree).
The hard rule is zero 5xx: malformed input must never reach a code path that crashes. Responses
must also match the document, so it cannot drift from what the server really sends.

CI-sized and reproducible: a fixed seed, derandomized generation, no example database, about
300 requests in all. The SSE variant of the events route is never requested (a stream never
ends), and turns are cheap because the shipped `scripted` model answers at once.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from brain.config import BrainConfig  # noqa: E402
from brain.settings import Settings  # noqa: E402
from brain.web.app import create_app  # noqa: E402
from brain.web.gateway import ActorGateway  # noqa: E402
from brain.web.live_hub import LiveHub  # noqa: E402
from brain.web.openapi import openapi_document  # noqa: E402
from tests.support.server import BrainServer  # noqa: E402

SEED = 20261202
MAX_EXAMPLES = 30  # Hypothesis examples per operation: about 300 requests in all
REQUEST_TIMEOUT_SECS = 30.0
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]



def document() -> dict[str, Any]:
    """The document of an app whose gateway never connects and whose hub never starts: building
    routes touches neither actors nor the (absent) data directory."""
    settings = Settings.from_env({"BRAIN_DATA_DIR": "/nonexistent/brain-schemathesis"})
    app = create_app(settings, BrainConfig.load(), ActorGateway(settings), "unused",
                     hub=LiveHub(settings.data_path))
    return openapi_document(app, BrainConfig.load())


DOCUMENT = document()
SCHEMA = schemathesis.openapi.from_dict(
    DOCUMENT,
    config=schemathesis.Config.from_dict({
        "seed": SEED,
        "generation": {"deterministic": True, "database": "none", "max-examples": MAX_EXAMPLES,
                       "with-security-parameters": False},
        "phases": {"examples": {"enabled": False}, "coverage": {"enabled": False},
                   "stateful": {"enabled": False}},
    }),
)  # fmt: skip

# Session ids that exist on the live server; filled by the `live` fixture before any case is
# drawn, so generated path parameters can hit real sessions and not only 404.
LIVE_SESSION_IDS: list[str] = []
SERVED: dict[tuple[str, str], bool] = {}
STATUSES: collections.Counter[tuple[str, int]] = collections.Counter()


@SCHEMA.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any]) -> Any:
    """Cases use a session that exists or keep the generated id (the real one first, so that
    Hypothesis's simplest examples exercise real sessions)."""
    if not path_parameters or "session_id" not in path_parameters or not LIVE_SESSION_IDS:
        return st.just(path_parameters)
    real = st.sampled_from(LIVE_SESSION_IDS).map(lambda sid: {**path_parameters, "session_id": sid})
    return st.one_of(real, st.just(path_parameters))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    root = tmp_path_factory.mktemp("schemathesis")
    server = BrainServer(root / "data", env={"BRAIN_MAX_TURN_SECS": "30"})
    try:
        server.start()
        LIVE_SESSION_IDS[:] = seed_sessions(server)
        yield server
    finally:
        server.kill()
        LIVE_SESSION_IDS.clear()
        report(root / "statistics.json", server)


def seed_sessions(server: BrainServer) -> list[str]:
    """Idle sessions, one with a finished turn, and an ended one (so delete can succeed)."""
    idle = [server.create_session()["id"] for _ in range(2)]
    talked = server.create_session(metadata={"fuzz": True})["id"]
    server.send(talked, "hello")
    ended = server.create_session()["id"]
    resp = server.request("POST", f"/v1/sessions/{ended}/end")
    assert resp.status_code == 200, resp.text
    return [*idle, talked, ended]


def report(path: Path, server: BrainServer) -> None:
    by_status = collections.Counter(status for _op, status in STATUSES.elements())
    summary = {
        "requests": sum(STATUSES.values()),
        "by_status": {str(k): v for k, v in sorted(by_status.items())},
        "by_operation": {f"{op} -> {status}": n for (op, status), n in sorted(STATUSES.items())},
    }
    path.write_text(json.dumps(summary, indent=2))
    print(f"\nschemathesis statistics ({path}):\n{json.dumps(summary, indent=2)}")
    if any(status >= 500 for status in by_status):
        print(f"server log tail:\n{server.log()}")


def is_served(server: BrainServer, method: str, path: str) -> bool:
    """Routes the contract lists may not be wired yet; an unrouted path is Falcon's 404."""
    if "{" in path:
        return True
    if (method, path) not in SERVED:
        resp = server.request(method, path, timeout=REQUEST_TIMEOUT_SECS)
        SERVED[(method, path)] = resp.status_code != 404
    return SERVED[(method, path)]


@SCHEMA.parametrize()
@settings(deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))  # fmt: skip
def test_api_never_fails_and_matches_its_document(case: Any, live: BrainServer) -> None:
    if not is_served(live, case.operation.method.upper(), case.operation.path):
        pytest.skip(f"{case.operation.label} is not served yet")
    # Accept: application/json keeps the events route on JSON pages: an SSE stream never ends.
    headers = {"Authorization": f"Bearer {live.token}", "Accept": "application/json"}
    response = case.call(base_url=live.url, headers=headers, timeout=REQUEST_TIMEOUT_SECS)
    STATUSES[(case.operation.label, response.status_code)] += 1
    case.validate_response(response, checks=CHECKS, headers=headers)


def test_the_served_document_is_the_fuzzed_one(live: BrainServer) -> None:
    assert live.request("GET", "/openapi.json").json() == json.loads(json.dumps(DOCUMENT))


def test_fuzzing_reached_real_sessions(live: BrainServer) -> None:
    """Guard against a run that only ever saw 404s: some cases hit live sessions and got 2xx."""
    if not STATUSES:
        pytest.skip("run together with the fuzz test")
    ok = {op for (op, status), _n in STATUSES.items() if 200 <= status < 300}
    assert any("{session_id}" in op for op in ok), STATUSES
    assert requests.get(live.url + "/healthz", timeout=REQUEST_TIMEOUT_SECS).status_code == 200


# Inputs that reached a 5xx when this test was written (found by probing beyond what the seeded
# run generates). Each must be refused with 400 and valid JSON.
JSON = {"Content-Type": "application/json"}
DEEP = b"[" * 100_000 + b"]" * 100_000


def hostile(name: str, method: str, path: str, **kwargs: Any) -> Any:
    return pytest.param(method, path, kwargs, id=name)


@pytest.mark.parametrize(("method", "path", "kwargs"), [
    hostile("last-event-id-superscript", "GET", "{sid}/events",
            headers={"Last-Event-ID": "\u00b2".encode("latin-1")}),
    hostile("last-event-id-5000-digits", "GET", "{sid}/events",
            headers={"Last-Event-ID": "1" * 5000}),
    hostile("create-5000-digit-int", "POST", "",
            data=b'{"metadata": {"n": ' + b"1" * 5000 + b"}}", headers=JSON),
    hostile("create-deep-nesting", "POST", "",
            data=b'{"metadata": {"a": ' + DEEP + b"}}", headers=JSON),
    hostile("create-900-levels", "POST", "",
            data=b'{"metadata": {"a": ' + b"[" * 900 + b"]" * 900 + b"}}", headers=JSON),
    hostile("create-deep-nesting-idempotent", "POST", "",
            data=b'{"metadata": {"a": ' + DEEP + b"}}", headers={**JSON, "Idempotency-Key": "k1"}),
    hostile("create-lone-surrogate", "POST", "",
            data=b'{"metadata": {"s": "\\ud800"}}', headers=JSON),
    hostile("create-nan", "POST", "", data=b'{"metadata": {"x": NaN}}', headers=JSON),
    hostile("create-huge-float", "POST", "", data=b'{"metadata": {"x": 1e400}}', headers=JSON),
    hostile("create-idle-ttl-2^63", "POST", "", json={"idle_ttl_ms": 2**63}),
    hostile("message-lone-surrogate", "POST", "{sid}/messages",
            data=b'{"input": "\\ud800"}', headers=JSON),
    hostile("message-deep-nesting", "POST", "{sid}/messages",
            data=b'{"input": [{"type": "t", "x": ' + DEEP + b"}]}", headers=JSON),
])  # fmt: skip
def test_hostile_input_is_a_400(
    live: BrainServer, idle_session: str, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    sid = idle_session
    url = "/v1/sessions" + ("/" + path.format(sid=sid) if path else "")
    resp = live.request(method, url, timeout=10, **kwargs)
    assert resp.status_code == 400, (resp.status_code, resp.text[:200])
    json.loads(resp.text, parse_constant=_reject_constant)


def _reject_constant(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON")


@pytest.fixture(scope="module")
def idle_session(live: BrainServer) -> str:
    """A session of its own: the fuzz run may have ended or deleted the seeded ones."""
    return live.create_session()["id"]
