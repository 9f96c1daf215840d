"""The Idempotency-Key middleware in one process: a real store, Falcon's test client, no server.

The end-to-end rules across SIGKILL and restart are in tests/e2e/test_idempotency_http.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import falcon
import falcon.testing
import pytest

from brain import errors
from brain.settings import Settings
from brain.web import errors as web_errors
from brain.web.contract import Answer, operation
from brain.web.idempotency_middleware import IdempotencyMiddleware
from brain.web.resources.messages import message_scope


class Cut(BaseException):
    """Stands for what no error handler renders (a killed greenlet)."""


class Principal:
    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.principal = "operator"
        req.context.request_id = "req_test"


class Work:
    """Counts runs; its answer depends on the body, so a replay is told from a rerun."""

    idempotent = {"POST": message_scope}

    def __init__(self) -> None:
        self.runs = 0

    @operation("work", "Work", {201: Answer("Done")}, errors=(400, 409), body={"type": "object"})
    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        self.runs += 1
        do = req.context.body.get("do")
        if do == "busy":
            raise errors.SessionBusy("another turn is active")
        if do == "cut":
            raise Cut()
        resp.status = falcon.HTTP_201
        resp.set_header("Location", f"/v1/sessions/{session_id}")
        resp.set_header("X-Not-Replayed", str(self.runs))
        resp.media = {"run": self.runs, "scope": message_scope(req)}


@pytest.fixture
def served(tmp_path: Path) -> tuple[falcon.testing.TestClient, Work]:
    app = falcon.App(middleware=[Principal(), IdempotencyMiddleware(
        Settings.from_env({"BRAIN_DATA_DIR": str(tmp_path)}))])
    web_errors.install(app)
    work = Work()
    app.add_route("/v1/sessions/{session_id}/work", work)
    return falcon.testing.TestClient(app), work


def post(client: falcon.testing.TestClient, body: dict[str, Any], key: str | None = "k1",
         **headers: str) -> falcon.testing.Result:
    if key is not None:
        headers["Idempotency-Key"] = key
    return client.simulate_post("/v1/sessions/s1/work", body=json.dumps(body),
                                headers={"Content-Type": "application/json", **headers})


def test_an_answer_is_replayed_without_running_the_responder(served: Any) -> None:
    client, work = served
    first = post(client, {"do": "work"})
    again = post(client, {"do": "work"})
    assert (first.status_code, work.runs) == (201, 1)
    assert (again.status_code, again.content) == (first.status_code, first.content)
    assert again.headers["Location"] == first.headers["Location"] == "/v1/sessions/s1"
    assert again.headers["Content-Type"] == first.headers["Content-Type"]
    assert "X-Not-Replayed" not in again.headers  # only the answer's own headers are stored


def test_an_error_answer_is_stored_and_replayed(served: Any) -> None:
    client, work = served
    first = post(client, {"do": "busy"})
    again = post(client, {"do": "busy"})
    assert first.status_code == 409 and first.json["error"]["code"] == "session_busy"
    assert (again.status_code, again.content, work.runs) == (409, first.content, 1)


def test_another_body_under_the_key_is_a_conflict(served: Any) -> None:
    client, work = served
    post(client, {"do": "work"})
    other = post(client, {"do": "other"})
    assert other.status_code == 409 and other.json["error"]["code"] == "idempotency_conflict"
    assert work.runs == 1


def test_send_and_submit_are_separate_scopes(served: Any) -> None:
    client, work = served
    sent = post(client, {"do": "work"})
    submitted = post(client, {"do": "work"}, Prefer="respond-async")
    assert (sent.json["scope"], submitted.json["scope"], work.runs) == ("send", "submit", 2)


def test_without_a_key_every_request_runs(served: Any) -> None:
    client, work = served
    post(client, {"do": "work"}, key=None)
    post(client, {"do": "work"}, key=None)
    assert work.runs == 2


def test_a_bad_key_is_refused_before_any_work(served: Any) -> None:
    client, work = served
    refused = post(client, {"do": "work"}, key="k\u00e9y".encode().decode("latin-1"))
    assert refused.status_code == 400 and work.runs == 0


def test_a_cut_off_request_leaves_its_claim_unanswered(served: Any) -> None:
    """No handler rendered an answer, so none is stored: the key stays in progress while this
    process lives (and is ambiguous once it is gone), and the work never runs twice."""
    client, work = served
    with pytest.raises(Cut):
        post(client, {"do": "cut"})
    again = post(client, {"do": "cut"})
    assert again.status_code == 409 and again.json["error"]["code"] == "request_in_progress"
    assert work.runs == 1
