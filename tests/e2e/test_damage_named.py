"""Over real HTTP, as an operator meets it: one byte flipped inside a frame in the middle of a
real segment file, then the session read. The Session's `damage`, the 500 `session_damaged` of
its Events and transcript reads (pages and stream) and the write refusal all name the same
segment, offset, sequence and reason, in the words of `brain journal verify`; the server log
says it once, at warning level; and no read wakes a session actor."""

from __future__ import annotations

import io
import json
from pathlib import Path

import requests

from brain.journal import JournalScan
from brain.journal.cli import verify
from brain.journal.frames import FRAME_HEADER_SIZE
from tests.support.server import (
    BrainServer,
    session_processes,
    wait_for_no_open_session_actor,
)

TURNS = 3
SSE_TIMEOUT_SECS = 10.0


def flip_a_middle_frame(session_dir: Path) -> dict:
    """Flip one payload byte of the frame in the middle of the first segment; the damage the
    session should report, as its `damage` object."""
    frames = list(JournalScan(session_dir / "journal"))
    frame = frames[len(frames) // 2]
    segment = session_dir / "journal" / f"{frame.segment:020d}.seg"
    data = bytearray(segment.read_bytes())
    data[frame.offset + FRAME_HEADER_SIZE + len(frame.payload) // 2] ^= 0x20
    segment.write_bytes(bytes(data))
    return {"segment": f"sessions/{session_dir.name}/journal/{segment.name}",
            "offset": frame.offset, "sequence": frame.seq,
            "reason": "payload checksum mismatch"}


def error_of(resp: requests.Response) -> tuple[int, str, str]:
    error = resp.json()["error"]
    return resp.status_code, error["code"], error["message"]


def damage_lines(log: str, session_id: str) -> list[dict]:
    """The log's lines that report the session's damage (JSON lines: their level is there)."""
    lines = []
    for text in log.splitlines():
        if f"session {session_id} is damaged:" in text:
            lines.append(json.loads(text))
    return lines


def test_a_damaged_session_names_its_damage_where_people_look(tmp_path: Path) -> None:
    s = BrainServer(tmp_path / "data", env={"BRAIN_LOG_FORMAT": "json"}).start()
    try:
        sid, healthy = s.create_session()["id"], s.create_session()["id"]
        for turn in range(TURNS):
            assert s.send(sid, f"turn {turn}")["status"] == "ended"
        session_dir = s.data_dir / "sessions" / sid
        assert not (session_dir / "checkpoint").exists()  # not due yet: every read scans all
        wait_for_no_open_session_actor(s)
        expected = flip_a_middle_frame(session_dir)
        where = (f"{expected['segment']} at byte offset {expected['offset']} "
                 f"(sequence {expected['sequence']}): {expected['reason']}")

        view = s.request("GET", f"/v1/sessions/{sid}")
        assert view.status_code == 200, view.text
        assert (view.json()["status"], view.json()["damage"]) == ("damaged", expected)
        listed = {x["id"]: x for x in s.request("GET", "/v1/sessions").json()["sessions"]}
        assert listed[sid]["damage"] == expected and "damage" not in listed[healthy]
        assert "damage" not in s.request("GET", f"/v1/sessions/{healthy}").json()

        for path in (f"/v1/sessions/{sid}/events", f"/v1/sessions/{sid}/transcript"):
            status, code, message = error_of(s.request("GET", path))
            assert (status, code) == (500, "session_damaged"), path
            assert where in message, message
            assert str(s.data_dir) not in message  # the data dir's layout, no more
        stream = s.request("GET", f"/v1/sessions/{sid}/events", timeout=SSE_TIMEOUT_SECS,
                           headers={"Accept": "text/event-stream"})
        assert error_of(stream)[:2] == (500, "session_damaged") and where in error_of(stream)[2]
        assert session_processes(s) == 0  # reads came from the journal, not from an actor

        out = io.StringIO()
        assert verify(str(session_dir), out) == 1
        assert out.getvalue().rstrip().endswith(where)  # the same words as the tool's

        log = s.log_path.read_text(errors="replace")
        reported = damage_lines(log, sid)
        assert len(reported) == 1, log[-3000:]
        assert reported[0]["level"] == "WARNING" and where in reported[0]["message"], reported
        assert reported[0]["session_id"] == sid

        sent = s.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "after"})
        assert error_of(sent)[:2] == (500, "session_damaged") and where in error_of(sent)[2]
        s.request("GET", f"/v1/sessions/{sid}")
        log = s.log_path.read_text(errors="replace")
        assert len(damage_lines(log, sid)) == 1, log[-3000:]  # found again, said once

        assert s.request("DELETE", f"/v1/sessions/{sid}").status_code == 204
        assert not (s.data_dir / "run" / "damage" / sid).exists()  # its mark goes with it
    finally:
        s.kill()
