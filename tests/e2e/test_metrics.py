"""GET /metrics: Prometheus text with requests, turns, effects, commit latency, SSE streams."""

from __future__ import annotations

import re

from tests.support.server import BrainServer
from tests.support.sse import SseClient
from tests.support.waiting import wait_for


def sample(text: str, name: str, labels: str = "") -> float | None:
    selector = re.escape(name) + (re.escape("{" + labels + "}") if labels else "")
    pattern = r"^" + selector + r" (\S+)$"
    match = re.search(pattern, text, re.MULTILINE)
    return float(match.group(1)) if match else None


def test_metrics_count_what_happened(brain_server: BrainServer) -> None:
    s = brain_server
    sid = s.create_session()["id"]
    for _ in range(2):
        assert s.send(sid, "count me")["status"] == "ended"
    follower = SseClient("127.0.0.1", s.port, f"/v1/sessions/{sid}/events", s.token)
    try:
        def scraped() -> str | None:
            resp = s.request("GET", "/metrics")
            assert resp.status_code == 200
            assert resp.headers["Content-Type"].startswith("text/plain")
            text = resp.text
            ready = (sample(text, "brain_turns_total", 'code="",status="ended"') == 2
                     and sample(text, "brain_sse_streams_open") == 1)
            return text if ready else None

        text = wait_for(scraped, timeout=20, interval=0.5, what="metrics flushed")
    finally:
        follower.close()
    assert sample(text, "brain_effects_total", 'kind="model_call",outcome="ok"') == 2
    assert sample(text, "brain_journal_commit_seconds_count") >= 12
    assert sample(text, "brain_journal_commit_seconds_sum") > 0
    sends = sample(text, "brain_http_requests_total",
                   'method="POST",route="/v1/sessions/{session_id}/messages",status="200"')
    assert sends == 2
    assert "# TYPE brain_journal_commit_seconds histogram" in text
    assert s.request("GET", "/metrics", token=None).status_code == 401
