"""The HTTP surface beyond one turn: lifecycle, listing, tokens, SSE catch-up and follow."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from tests.support.server import BrainServer, configured
from tests.support.sse import SseClient


def test_end_then_delete_and_lifecycle_errors(brain_server: BrainServer) -> None:
    s = brain_server
    sid = s.create_session()["id"]
    cancel = s.request("POST", f"/v1/sessions/{sid}/cancel")
    assert (cancel.status_code, cancel.json()) == (200, {"session_id": sid, "sequence": None})
    deleted_early = s.request("DELETE", f"/v1/sessions/{sid}")
    assert (deleted_early.status_code, deleted_early.json()["error"]["code"]) == (
        409, "session_active")
    s.send(sid, "one turn")
    ended = s.request("POST", f"/v1/sessions/{sid}/end")
    assert ended.status_code == 200 and ended.json()["status"] == "ended"
    refused = s.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "more"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "session_ended")
    kinds = [e["kind"] for e in s.events(sid)]
    assert kinds[-2:] == ["session_ending", "session_ended"]
    assert s.request("GET", f"/v1/sessions/{sid}/transcript").status_code == 200
    assert s.request("DELETE", f"/v1/sessions/{sid}").status_code == 204
    assert s.request("GET", f"/v1/sessions/{sid}").status_code == 404
    assert not (s.data_dir / "sessions" / sid).exists()


def test_list_newest_first_with_cursor_and_status(brain_server: BrainServer) -> None:
    s = brain_server
    ids = [s.create_session()["id"] for _ in range(5)]
    s.request("POST", f"/v1/sessions/{ids[0]}/end")
    page = s.request("GET", "/v1/sessions", params={"limit": 2}).json()
    assert [x["id"] for x in page["sessions"]] == ids[::-1][:2]
    rest = s.request("GET", "/v1/sessions", params={"cursor": page["next_cursor"]}).json()
    assert [x["id"] for x in rest["sessions"]] == ids[::-1][2:]
    ended = s.request("GET", "/v1/sessions", params={"status": "ended"}).json()
    assert [x["id"] for x in ended["sessions"]] == [ids[0]]
    assert s.request("GET", "/v1/sessions", params={"limit": 101}).status_code == 400


def test_session_token_reaches_only_its_session(brain_server: BrainServer) -> None:
    s = brain_server
    mine, other = s.create_session()["id"], s.create_session()["id"]
    resp = s.request("POST", f"/v1/sessions/{mine}/tokens")
    assert resp.status_code == 201
    token = resp.json()["token"]
    assert s.request("GET", f"/v1/sessions/{mine}", token=token).status_code == 200
    assert s.request("POST", f"/v1/sessions/{mine}/messages", token=token,
                     json={"input": "hi"}).json()["status"] == "ended"
    assert s.request("GET", f"/v1/sessions/{other}", token=token).status_code == 404
    assert s.request("GET", "/v1/sessions", token=token).status_code == 403
    assert s.request("POST", "/v1/sessions", token=token, json={}).status_code == 403
    assert s.request("POST", f"/v1/sessions/{mine}/tokens", token=token).status_code == 403
    stored = list((s.data_dir / "sessions" / mine / "credentials").iterdir())
    assert len(stored) == 1 and token not in stored[0].read_bytes().decode(errors="replace")
    assert token.split("_")[-1] not in stored[0].name


SLOW_STREAM_CONFIG = """
[models.slow]
provider = "scripted"
script = [ { text = "streamed slowly", stream_chunks = 3, chunk_delay_ms = 300 } ]
"""


def test_sse_catches_up_then_follows_then_ends(tmp_path: Path) -> None:
    s = configured(tmp_path, SLOW_STREAM_CONFIG).start()
    try:
        _follow_a_session(s)
    finally:
        s.kill()


def _follow_a_session(s: BrainServer) -> None:
    sid = s.create_session(model="slow")["id"]
    s.send(sid, "before subscribing")
    history = s.events(sid)
    client = SseClient("127.0.0.1", s.port, f"/v1/sessions/{sid}/events", s.token)
    try:
        assert client.status == 200
        assert client.headers["content-type"].startswith("text/event-stream")
        caught_up = client.events(len(history))
        assert [int(f.id) for f in caught_up] == [e["sequence"] for e in history]
        assert [json.loads(f.data) for f in caught_up] == history
        assert all(f.event == json.loads(f.data)["kind"] for f in caught_up)
        sender = threading.Thread(target=s.send, args=(sid, "while following"))
        sender.start()
        first = client.events(1)  # turn_started arrives while the turn is still running
        assert first[0].event == "turn_started"
        sender.join(timeout=60)
        after_turn = s.events(sid, after=history[-1]["sequence"])
        frames = first + client.events(len(after_turn) - 1 + 3)  # + three live deltas
        committed = [f for f in frames if f.id is not None]
        deltas = [f for f in frames if f.event == "model_delta"]
        assert [json.loads(f.data) for f in committed] == after_turn[:len(committed)]
        assert len(deltas) == 3 and all(f.id is None for f in deltas)
        model_call = next(e for e in after_turn if e["kind"] == "model_call_started")
        answer = next(e for e in after_turn if e["kind"] == "model_call_ended")
        joined = "".join(json.loads(f.data)["delta"] for f in deltas)
        assert {json.loads(f.data)["started"] for f in deltas} == {model_call["sequence"]}
        assert joined == answer["data"]["result"]["message"]["content"][0]["text"]
        assert [json.loads(f.data) for f in committed] == after_turn
        s.request("POST", f"/v1/sessions/{sid}/end")
        tail = client.events(2)
        assert [f.event for f in tail] == ["session_ending", "session_ended"]
        assert client.next_frame(timeout=10) is None  # the stream ends after session_ended
    finally:
        client.close()


def test_sse_last_event_id_resumes_after_that_sequence(brain_server: BrainServer) -> None:
    s = brain_server
    sid = s.create_session()["id"]
    s.send(sid, "one")
    events = s.events(sid)
    middle = events[len(events) // 2]["sequence"]
    client = SseClient("127.0.0.1", s.port, f"/v1/sessions/{sid}/events", s.token,
                       params={"after": 0}, last_event_id=str(middle))
    try:
        expected = [e for e in events if e["sequence"] > middle]
        frames = client.events(len(expected))
        assert [json.loads(f.data) for f in frames] == expected
    finally:
        client.close()
