"""Live hints wake web workers only for commits that hold an Event: SSE followers deliver only
Events, and a plain transcript append is a private record."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from brain.journal import JournalScan
from brain.journal.events import is_public, transcript_length_after
from brain.live.followers import live_dir, mark_following
from tests.support.server import BrainServer
from tests.support.sse import SseClient
from tests.support.waiting import wait_for

HINT_WAIT_SECS = 5.0


def listen_like_a_worker(server: BrainServer, session_id: str) -> socket.socket:
    """A datagram socket where publishers find web workers (run/live/*.sock), marked as a
    follower of `session_id` as a worker with an SSE subscriber of it marks itself."""
    live = live_dir(server.data_dir)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(live / "test-listener.sock"))
    sock.settimeout(0.2)
    mark_following(live, session_id, "test-listener.sock")
    return sock


def hinted_sequences(sock: socket.socket, through: int) -> list[int]:
    sequences: list[int] = []
    deadline = time.monotonic() + HINT_WAIT_SECS
    while time.monotonic() < deadline and (not sequences or sequences[-1] < through):
        try:
            message = json.loads(sock.recv(65536))
        except TimeoutError:
            continue
        if "q" in message:
            sequences.append(message["q"])
    return sequences


def batches(journal: Path) -> list[tuple[int, bool]]:
    """(last sequence, holds an Event) of every committed batch."""
    out, public, length = [], False, 0
    for frame in JournalScan(journal):
        public = public or is_public(frame.record, length)
        length = transcript_length_after(frame.record, length)
        if frame.header.end_of_batch:
            out.append((frame.seq, public))
            public = False
    return out


def test_a_turn_hints_each_commit_with_an_event_and_no_other(brain_server: BrainServer) -> None:
    s = brain_server
    sid = s.create_session()["id"]
    sock = listen_like_a_worker(s, sid)
    try:
        before = batches(s.data_dir / "sessions" / sid / "journal")[-1][0]
        assert s.send(sid, "hello")["status"] == "ended"
        turn = [b for b in batches(s.data_dir / "sessions" / sid / "journal") if b[0] > before]
        hinted = hinted_sequences(sock, turn[-1][0])
    finally:
        sock.close()
    assert [seq for seq, _ in turn if not _] != []  # the turn has private-only commits
    assert hinted == [seq for seq, public in turn if public]


def test_a_worker_marks_a_session_while_it_has_followers_of_it(brain_server: BrainServer) -> None:
    """Hints go only to workers that follow the session: the marker lives as long as a stream."""
    s = brain_server
    followed, other = s.create_session()["id"], s.create_session()["id"]
    follow = live_dir(s.data_dir) / "follow"
    client = SseClient("127.0.0.1", s.port, f"/v1/sessions/{followed}/events", s.token,
                       timeout=30)
    try:
        assert client.status == 200
        markers = wait_for(lambda: list((follow / followed).glob("*.sock")) or None, timeout=10)
        assert len(markers) == 1
        assert (live_dir(s.data_dir) / markers[0].name).exists()  # names a worker's socket
        assert s.send(other, "nobody follows this one")["status"] == "ended"
        assert not (follow / other).exists()
        assert s.send(followed, "hello")["status"] == "ended"
        # within 10 s: before the 15 s keep-alive re-read, so the hints did it
        kinds = [f.event for f in client.events(8, timeout=10)]
        assert kinds[0] == "session_created" and kinds[-1] == "turn_ended"
        assert s.request("POST", f"/v1/sessions/{followed}/end").status_code == 200
        # The stream ends after session_ended, and with its last subscriber the marker goes.
        assert wait_for(lambda: not (follow / followed).exists() or None, timeout=20)
    finally:
        client.close()
