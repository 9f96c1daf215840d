"""Live hints wake web workers only for commits that hold an Event: SSE followers deliver only
Events, and a plain transcript append is a private record."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from brain.journal import JournalScan
from brain.journal.events import is_public, transcript_length_after
from tests.support.server import BrainServer

HINT_WAIT_SECS = 5.0


def listen_like_a_worker(server: BrainServer) -> socket.socket:
    """A datagram socket where the publishers look for web workers (run/live/*.sock)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(server.data_dir / "run" / "live" / "test-listener.sock"))
    sock.settimeout(0.2)
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
    sock = listen_like_a_worker(s)
    try:
        time.sleep(1.1)  # publishers rescan the directory at least every second
        before = batches(s.data_dir / "sessions" / sid / "journal")[-1][0]
        assert s.send(sid, "hello")["status"] == "ended"
        turn = [b for b in batches(s.data_dir / "sessions" / sid / "journal") if b[0] > before]
        hinted = hinted_sequences(sock, turn[-1][0])
    finally:
        sock.close()
    assert [seq for seq, _ in turn if not _] != []  # the turn has private-only commits
    assert hinted == [seq for seq, public in turn if public]
