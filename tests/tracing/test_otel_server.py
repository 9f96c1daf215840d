"""BRAIN_OTEL through a real server, exporting to a real OTLP/HTTP receiver in the test.

The receiver decodes each ExportTraceServiceRequest with the opentelemetry-proto classes; the
test checks the tree of one tool turn: one trace id, the client's traceparent continued, and
request → turn → activation → model call / tool call, with the journal commits under them.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support.server import BrainServer, configured  # noqa: E402
from tests.support.waiting import wait_for  # noqa: E402
from tests.tracing.models import TOOLUSER  # noqa: E402

CONFIG = TOOLUSER + """
[models.slowtool]
provider = "scripted"
script = [
  { tool_calls = [ { name = "echo", input = { a = 1 } } ], delay_ms = 400 },
  { text = "done", delay_ms = 400 },
]
"""

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
SECRET_TEXT = "the words of the user, never exported"


class Receiver:
    """An OTLP/HTTP trace receiver: every span it is sent, as a plain dict."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.service_names: set[str] = set()
        self.raw: list[bytes] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.take(body)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            self.raw.append(body)
            for resource_spans in request.resource_spans:
                for attr in resource_spans.resource.attributes:
                    if attr.key == "service.name":
                        self.service_names.add(attr.value.string_value)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append({
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                            "attributes": {a.key: _value(a.value) for a in span.attributes},
                        })

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.spans)


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    out = Receiver()
    out.thread.start()
    try:
        yield out
    finally:
        out.server.shutdown()
        out.server.server_close()
        out.thread.join(timeout=10)


def otel_server(tmp_path: Path, receiver: Receiver, suspend_after_ms: int) -> BrainServer:
    return configured(tmp_path, CONFIG, {
        "BRAIN_OTEL": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": "brain-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "BRAIN_SUSPEND_AFTER_MS": str(suspend_after_ms),
    }).start()


@pytest.fixture
def server(tmp_path: Path, receiver: Receiver) -> Iterator[BrainServer]:
    started = otel_server(tmp_path, receiver, 60000)  # the turn stays in one actor throughout
    try:
        yield started
    finally:
        started.kill()


@pytest.fixture
def suspending(tmp_path: Path, receiver: Receiver) -> Iterator[BrainServer]:
    started = otel_server(tmp_path, receiver, 50)  # each 400 ms model call suspends the turn
    try:
        yield started
    finally:
        started.kill()


def test_one_tool_turn_is_one_trace_continuing_the_clients(server: BrainServer,
                                                           receiver: Receiver) -> None:
    sid = server.create_session(model="tooluser", tools=["echo"])["id"]
    sent = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": SECRET_TEXT},
                          headers={"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"})
    assert sent.status_code == 200 and sent.json()["status"] == "ended", sent.text

    def whole_turn() -> list[dict[str, Any]] | None:
        mine = [s for s in receiver.snapshot() if s["trace_id"] == CLIENT_TRACE]
        names = [s["name"] for s in mine]
        done = (names.count("model call") == 2 and "tool call" in names and "turn" in names
                and "activation" in names and any(n.startswith("POST ") for n in names))
        return mine if done else None

    spans = wait_for(whole_turn, timeout=30, what="the turn's spans at the receiver")
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)

    (request,) = by_name["POST /v1/sessions/{session_id}/messages"]
    (turn,) = by_name["turn"]
    (activation,) = by_name["activation"]
    assert request["parent"] == CLIENT_SPAN  # the client's traceparent, continued
    assert request["attributes"]["http.route"] == "/v1/sessions/{session_id}/messages"
    assert request["attributes"]["http.response.status_code"] == 200
    assert turn["parent"] == request["span_id"]
    assert activation["parent"] == turn["span_id"]
    for effect in by_name["model call"] + by_name["tool call"]:
        assert effect["parent"] == activation["span_id"]
        assert effect["attributes"]["brain.session_id"] == sid
        assert isinstance(effect["attributes"]["brain.sequence"], int)
    last = turn["attributes"]["brain.end_sequence"]  # turn_ended's
    wait_for(lambda: any(s["name"] == "journal commit" and s["trace_id"] == CLIENT_TRACE
                         and s["attributes"]["brain.last_sequence"] == last
                         for s in receiver.snapshot()),
             timeout=30, what="the span of the commit that ended the turn")
    commits = [s for s in receiver.snapshot() if s["name"] == "journal commit"
               and s["trace_id"] == CLIENT_TRACE]
    assert len(commits) >= 4  # the turn's start, the model and Tool calls', the turn's end
    assert {s["attributes"]["brain.session_id"] for s in commits} == {sid}
    assert {s["parent"] for s in commits} <= {turn["span_id"], activation["span_id"]}
    assert turn["attributes"]["brain.session_id"] == sid
    assert "brain-under-test" in receiver.service_names
    with receiver.lock:
        assert not any(SECRET_TEXT.encode() in body for body in receiver.raw)
        assert not any(server.token.encode() in body for body in receiver.raw)


def test_a_turn_without_traceparent_is_a_trace_of_its_own(server: BrainServer,
                                                         receiver: Receiver) -> None:
    sid = server.create_session(model="tooluser", tools=["echo"])["id"]
    sent = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "go"})
    assert sent.status_code == 200, sent.text

    def turn_span() -> dict[str, Any] | None:
        return next((s for s in receiver.snapshot() if s["name"] == "turn"
                     and s["attributes"].get("brain.session_id") == sid), None)

    turn = wait_for(turn_span, timeout=30, what="the turn span")
    request = wait_for(lambda: next((s for s in receiver.snapshot()
                                     if s["span_id"] == turn["parent"]), None),
                       timeout=30, what="the request span")
    assert request["name"] == "POST /v1/sessions/{session_id}/messages"
    assert request["parent"] == "" and request["trace_id"] == turn["trace_id"]


def test_a_suspended_turn_stays_one_trace(suspending: BrainServer, receiver: Receiver) -> None:
    server = suspending
    sid = server.create_session(model="slowtool", tools=["echo"])["id"]
    sent = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "go"},
                          headers={"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"})
    assert sent.status_code == 200 and sent.json()["status"] == "ended", sent.text
    events = server.events(sid)
    turn_end = next(e for e in events if e["kind"] == "turn_ended")["sequence"]

    def through_turn_end() -> list[dict[str, Any]] | None:
        spans = [s for s in receiver.snapshot()
                 if s["attributes"].get("brain.session_id") == sid]
        ended = any(s["name"] == "journal commit"
                    and s["attributes"]["brain.last_sequence"] == turn_end for s in spans)
        return spans if ended else None

    spans = wait_for(through_turn_end, timeout=30, what="the commit that ended the turn")
    turn_spans = [s for s in spans if s["trace_id"] == CLIENT_TRACE and s["name"] == "turn"]
    assert len(turn_spans) == 1
    (turn,) = turn_spans
    assert turn["attributes"]["brain.left_open"] == "suspended"
    resumed = [s for s in spans if s["attributes"].get("brain.resumed")]
    assert resumed and all(s["parent"] == turn["span_id"] for s in resumed)
    in_turn = [s for s in spans if s["attributes"].get("brain.sequence", 0) >= turn["attributes"][
        "brain.sequence"] or s["name"] == "journal commit"
        and s["attributes"]["brain.first_sequence"] >= turn["attributes"]["brain.sequence"]]
    assert {s["trace_id"] for s in in_turn} == {CLIENT_TRACE}
    assert not list((server.data_dir / "run" / "otel").glob("*"))  # forgotten at the end


def test_without_brain_otel_opentelemetry_is_not_imported() -> None:
    code = ("import sys, brain.web.app, brain.actors.session.actor, brain.tracing.otel as o; "
            "assert o.tracer() is None; "
            "print(any(m.startswith('opentelemetry') for m in sys.modules))")
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=env, cwd=Path(__file__).parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_kept_traceparent_no_turn_resumes_is_removed(suspending: BrainServer,
                                                       receiver: Receiver) -> None:
    server = suspending
    sid = server.create_session(model="tooluser", tools=["echo"])["id"]
    kept = server.data_dir / "run" / "otel" / sid
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(f"1 00-{CLIENT_TRACE}-{CLIENT_SPAN}-01\n")  # as a suspension leaves it
    sent = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "go"})
    assert sent.status_code == 200 and sent.json()["status"] == "ended", sent.text
    assert not kept.exists()  # the open restored no suspended turn: nothing will read it


def test_start_clears_every_kept_traceparent(tmp_path: Path) -> None:
    from brain.tracing.otel import clear_kept_traceparents

    assert clear_kept_traceparents(tmp_path) == 0  # no folder yet
    folder = tmp_path / "run" / "otel"
    folder.mkdir(parents=True)
    for sid in ("a", "b"):
        (folder / sid).write_text(f"3 00-{CLIENT_TRACE}-{CLIENT_SPAN}-01\n")
    assert clear_kept_traceparents(tmp_path) == 2
    assert list(folder.iterdir()) == []


def test_a_submit_admitted_by_the_web_worker_continues_the_clients_trace(
        server: BrainServer, receiver: Receiver) -> None:
    sid = server.create_session(model="tooluser", tools=["echo"])["id"]
    admitted = None
    for _ in range(20):  # the web worker admits only while no actor holds the session
        time.sleep(0.3)
        sent = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "go"},
                              headers={"Prefer": "respond-async",
                                       "traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"})
        assert sent.status_code == 202, sent.text
        sequence = sent.json()["sequence"]
        wait_for(lambda: server.events(sid)[-1]["kind"] in ("turn_ended", "turn_failed"),
                 timeout=30, what="the submitted turn is over")

        def turn_span(sequence: int = sequence) -> dict[str, Any] | None:
            return next((s for s in receiver.snapshot() if s["name"] == "turn"
                         and s["attributes"].get("brain.session_id") == sid
                         and s["attributes"].get("brain.sequence") == sequence), None)

        span = wait_for(turn_span, timeout=30, what="the turn's span")
        if span["attributes"].get("brain.admitted_by") == "web worker":
            admitted = span
            break
    assert admitted is not None, "no submit was admitted by the web worker"
    assert admitted["trace_id"] == CLIENT_TRACE
    spans = receiver.snapshot()
    request = next(s for s in spans if s["span_id"] == admitted["parent"])
    assert request["name"] == "POST /v1/sessions/{session_id}/messages"
    assert request["trace_id"] == CLIENT_TRACE
    under_turn = [s for s in spans if s["parent"] == admitted["span_id"]]
    assert any(s["name"] == "activation" for s in under_turn)


def test_a_create_continues_the_clients_trace(server: BrainServer, receiver: Receiver) -> None:
    created = server.request("POST", "/v1/sessions", json={"model": "tooluser"},
                             headers={"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"})
    assert created.status_code == 201, created.text
    sid = created.json()["id"]

    def create_commit() -> dict[str, Any] | None:
        return next((s for s in receiver.snapshot() if s["name"] == "journal commit"
                     and s["attributes"].get("brain.session_id") == sid), None)

    commit = wait_for(create_commit, timeout=30, what="the create's commit span")
    assert commit["trace_id"] == CLIENT_TRACE
    request = wait_for(lambda: next((s for s in receiver.snapshot()
                                     if s["span_id"] == commit["parent"]), None),
                       timeout=30, what="the create's request span (another process exports it)")
    assert request["name"] == "POST /v1/sessions" and request["parent"] == CLIENT_SPAN
