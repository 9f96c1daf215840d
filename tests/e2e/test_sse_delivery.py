"""SSE under load and misbehaviour (issue 8): fan-out, resume, and per-session isolation."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from tests.support.server import BrainServer, configured
from tests.support.sockets import unsent_bytes
from tests.support.sse import SseClient

SLOW = """
[models.slow]
provider = "scripted"
script = [ { text = "one two three four", stream_chunks = 4, chunk_delay_ms = 400 } ]
"""


def committed(frames: list) -> list[dict]:
    return [json.loads(f.data) for f in frames if f.id is not None]


def follow_until_end(client: SseClient, sink: list, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = client.next_frame(timeout=max(0.1, deadline - time.monotonic()))
        if frame is None:
            return
        if not frame.comment:
            sink.append(frame)


def test_hundred_followers_each_get_every_event_once_in_order(brain_server: BrainServer) -> None:
    s = brain_server
    sid = s.create_session()["id"]
    clients = [SseClient("127.0.0.1", s.port, f"/v1/sessions/{sid}/events", s.token,
                         timeout=60) for _ in range(100)]
    received: list[list] = [[] for _ in clients]
    threads = [threading.Thread(target=follow_until_end, args=(c, r))
               for c, r in zip(clients, received, strict=True)]
    try:
        assert all(c.status == 200 for c in clients)
        for t in threads:
            t.start()
        for i in range(3):
            assert s.send(sid, f"turn {i}")["status"] == "ended"
        assert s.request("POST", f"/v1/sessions/{sid}/end").status_code == 200
        for t in threads:
            t.join(timeout=90)
    finally:
        for c in clients:
            c.close()
    expected = s.events(sid)
    assert expected[-1]["kind"] == "session_ended"
    for frames in received:
        assert committed(frames) == expected


def test_reconnect_with_last_event_id_mid_turn(tmp_path: Path) -> None:
    s = configured(tmp_path, SLOW).start()
    try:
        sid = s.create_session(model="slow")["id"]
        first = SseClient("127.0.0.1", s.port, f"/v1/sessions/{sid}/events", s.token)
        sender = threading.Thread(target=s.send, args=(sid, "stream slowly"))
        sender.start()
        before: list = []
        while not any(f.event == "model_delta" for f in before):
            before += first.events(1)
        first.close()  # dropped in the middle of the model call
        last_id = [f.id for f in before if f.id is not None][-1]
        second = SseClient("127.0.0.1", s.port, f"/v1/sessions/{sid}/events", s.token,
                           params={"after": 0}, last_event_id=last_id)
        after: list = []
        while not any(f.event == "turn_ended" for f in after):
            after += second.events(1)
        second.close()
        sender.join(timeout=30)
        assert committed(before) + committed(after) == s.events(sid)
    finally:
        s.kill()


def test_stalled_subscriber_does_not_delay_another_session(brain_server: BrainServer) -> None:
    s = brain_server
    a, b = s.create_session()["id"], s.create_session()["id"]
    stalled = SseClient("127.0.0.1", s.port, f"/v1/sessions/{a}/events", s.token,
                        recv_buffer=64 * 1024)
    follower = SseClient("127.0.0.1", s.port, f"/v1/sessions/{b}/events", s.token)
    try:
        big = "x" * 500_000
        for _ in range(5):  # megabytes of Events on A that nobody reads
            result = s.send(a, big)
            assert result["status"] == "ended", result.get("error")
        client_port = stalled.sock.getsockname()[1]
        assert unsent_bytes(s.port, client_port) > 64 * 1024  # A's stream really is stuck
        follower.events(len(s.events(b)))  # B's history so far
        started = time.monotonic()
        assert s.send(b, "quick")["status"] == "ended"
        frames: list = []
        while not any(f.event == "turn_ended" for f in frames):
            frames += follower.events(1, timeout=10)
        assert time.monotonic() - started < 5.0
        # The stalled subscriber is caught up from the journal, not dropped.
        history = s.events(a, after=0)
        got: list = []
        deadline = time.monotonic() + 120
        while len(got) < len(history) and time.monotonic() < deadline:
            frames = stalled.events(1, timeout=60)
            assert frames, f"A's stream ended after {len(got)} of {len(history)} Events"
            got += [json.loads(f.data) for f in frames if f.id is not None]
        assert got == history
    finally:
        stalled.close()
        follower.close()


def test_every_read_right_after_each_create_finds_the_session(brain_server: BrainServer) -> None:
    """Creates from several clients at once, each read back at once on fresh connections (so
    by either web worker): the stream, the Session, its Events page and its transcript."""
    s = brain_server
    misses: list[tuple[str, str, int]] = []

    def create_and_read(count: int) -> None:
        for _ in range(count):
            sid = s.create_session()["id"]
            stream = SseClient("127.0.0.1", s.port, f"/v1/sessions/{sid}/events", s.token,
                               timeout=30)
            stream.close()
            reads = [("stream", stream.status)] + [
                (path, s.request("GET", path).status_code)
                for path in (f"/v1/sessions/{sid}", f"/v1/sessions/{sid}/events",
                             f"/v1/sessions/{sid}/transcript")]
            misses.extend((sid, what, code) for what, code in reads if code != 200)

    clients = [threading.Thread(target=create_and_read, args=(15,)) for _ in range(4)]
    for client in clients:
        client.start()
    for client in clients:
        client.join(timeout=120)
    assert not any(client.is_alive() for client in clients)
    assert misses == []
    assert len(s.request("GET", "/v1/sessions", params={"limit": 100}).json()["sessions"]) == 60
