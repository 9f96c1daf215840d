"""GET /metrics: prometheus_client's text, parsed with its parser, after real turns: requests,
turns, effects, latency histograms, SSE streams and the registry's gauges."""

from __future__ import annotations

from tests.support.metrics_scrape import Samples, scrape, value
from tests.support.server import BrainServer
from tests.support.sse import SseClient
from tests.support.waiting import wait_for


def test_metrics_count_what_happened(brain_server: BrainServer) -> None:
    s = brain_server
    _, before = scrape(s)
    assert value(before, "brain_turns_total", code="", status="ended") in (None, 0.0)
    sid = s.create_session()["id"]
    for _ in range(2):
        assert s.send(sid, "count me")["status"] == "ended"
    follower = SseClient("127.0.0.1", s.port, f"/v1/sessions/{sid}/events", s.token)
    try:
        def scraped() -> tuple[dict[str, str], Samples] | None:
            types, samples = scrape(s)
            ready = (value(samples, "brain_turns_total", code="", status="ended") == 2
                     and value(samples, "brain_sse_streams_open") == 1)
            return (types, samples) if ready else None

        types, samples = wait_for(scraped, timeout=20, interval=0.5, what="metrics flushed")
    finally:
        follower.close()
    assert value(samples, "brain_effects_total", kind="model_call", outcome="ok") == 2
    sends = value(samples, "brain_http_requests_total", method="POST",
                  route="/v1/sessions/{session_id}/messages", status="200")
    assert sends == 2
    assert types["brain_turns"] == "counter" and types["brain_http_requests"] == "counter"
    assert types["brain_effects"] == "counter"
    for name in ("brain_journal_commit_seconds", "brain_turn_duration_seconds",
                 "brain_effect_duration_seconds", "brain_admission_wait_seconds"):
        assert types[name] == "histogram", name
    assert value(samples, "brain_journal_commit_seconds_count") >= 12
    assert value(samples, "brain_journal_commit_seconds_sum") > 0
    assert value(samples, "brain_turn_duration_seconds_count", status="ended") == 2
    assert value(samples, "brain_turn_duration_seconds_bucket", status="ended",
                 le="+Inf") == 2
    assert value(samples, "brain_effect_duration_seconds_count", kind="model_call") == 2
    assert value(samples, "brain_admission_wait_seconds_count") >= 1
    for name in ("brain_sse_streams_open", "brain_session_actors_open", "brain_turns_suspended"):
        assert types[name] == "gauge", name
    assert value(samples, "brain_turns_suspended") == 0
    assert value(samples, "brain_session_actors_open") is not None
    assert s.request("GET", "/metrics", token=None).status_code == 401
