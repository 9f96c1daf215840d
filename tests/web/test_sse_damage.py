"""An SSE stream over a damaged journal: refused before any byte, or ended cleanly mid-stream.

In-process, on a real journal: the web layer's stream generator is driven directly, so the
damage can be placed exactly where the follower reads next and the log inspected.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import cbor2
import falcon
import falcon.testing
import pytest

from brain.journal import CorruptJournal, JournalWriter, SessionReader
from brain.journal.frames import FRAME_HEADER_SIZE, SEGMENT_HEADER_SIZE, encode_frame
from brain.settings import Settings
from brain.web import errors as web_errors
from brain.web.live_hub import LiveHub
from brain.web.middleware import RequestIdMiddleware
from brain.web.resources.history import EventsResource
from brain.web.sse import EventStream, open_stream
from tests.journal.helpers import created, delta, message, open_writer, segments

SESSION = "s1"
KEEPALIVE_SECS = 0.05  # the follow loop re-reads at least this often, so no next() blocks long
WAIT_SECS = 10.0


@pytest.fixture
def session_dir(tmp_path: Path) -> Path:
    path = tmp_path / "sessions" / SESSION
    writer: JournalWriter = open_writer(path)
    writer.append([created(), delta(0, [message("hi")])])
    writer.append([{"kind": "turn_started", "input": "hi", "mode": "send"}])
    writer.close()
    return path


def open_frames(session_dir: Path, hub: LiveHub, after: int = 0) -> EventStream:
    return open_stream(SessionReader(session_dir), session_dir, hub, SESSION, after, "req_test",
                       keepalive_secs=KEEPALIVE_SECS)


def append_damaged_frame(session_dir: Path, seq: int) -> None:
    """A whole, committed-looking frame whose payload no longer matches its checksum."""
    payload = cbor2.dumps({"seq": seq, "kind": "kv_put", "at": 1, "key": "k", "value": 1})
    frame = bytearray(encode_frame(seq, payload, end_of_batch=True))
    frame[FRAME_HEADER_SIZE + 3] ^= 0xFF
    with open(segments(session_dir)[-1], "ab") as segment:
        segment.write(bytes(frame))


def damage_first_frame(session_dir: Path) -> None:
    path = segments(session_dir)[0]
    data = bytearray(path.read_bytes())
    data[SEGMENT_HEADER_SIZE + FRAME_HEADER_SIZE + 5] ^= 0xFF
    path.write_bytes(bytes(data))


def drain(frames: Iterator[bytes], until: bytes) -> list[bytes]:
    """Frames up to and including the first containing `until`; bounded by WAIT_SECS."""
    seen: list[bytes] = []
    deadline = time.monotonic() + WAIT_SECS
    for frame in frames:
        seen.append(frame)
        if until in frame:
            return seen
        assert time.monotonic() < deadline, f"{until!r} not streamed in time: {seen}"
    raise AssertionError(f"stream ended before {until!r}: {seen}")


def test_damage_before_the_first_event_raises_before_any_byte(
    session_dir: Path, tmp_path: Path
) -> None:
    damage_first_frame(session_dir)
    hub = LiveHub(tmp_path)
    with pytest.raises(CorruptJournal):
        open_frames(session_dir, hub)
    assert hub.subscriber_count() == 0  # nothing left subscribed for a stream never sent


def test_damage_found_while_following_ends_the_stream_with_an_error_frame(
    session_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hub = LiveHub(tmp_path)
    stream = open_frames(session_dir, hub)
    try:
        caught_up = drain(stream, b"event: turn_started")
        assert caught_up[0] == b": stream open\n\n"
        append_damaged_frame(session_dir, seq=4)
        hub.dispatch({"s": SESSION, "q": 4})
        with caplog.at_level(logging.WARNING):
            rest = list(stream)  # ends by itself: no exception escapes to the WSGI server
    finally:
        stream.close()  # what the WSGI server calls when the body ends or the client goes
    error = [frame for frame in rest if frame.startswith(b"event: error\n")]
    assert error and rest[-1] == error[0], rest
    assert b"\nid:" not in error[0] and not error[0].startswith(b"id:")
    data = json.loads(error[0].split(b"data: ", 1)[1])
    assert data == {"error": {"code": "session_damaged", "message": data["error"]["message"],
                              "request_id": "req_test"}}
    # Where, as a page's 500 says it: the segment under the data dir, not the disk's layout.
    message = data["error"]["message"]
    segment = segments(session_dir)[-1].name
    assert f"damaged: sessions/{SESSION}/journal/{segment} at byte offset " in message
    assert "(sequence 4): frame header checksum mismatch" in message  # past the room's zeros
    assert str(tmp_path) not in message
    records = [r for r in caplog.records if r.name == "brain.web.sse"]
    assert records and all(r.exc_info is None for r in records)
    assert "journal refused while streaming" in records[0].getMessage()
    assert hub.subscriber_count() == 0


def test_a_stream_the_server_never_iterated_still_unsubscribes(
    session_dir: Path, tmp_path: Path
) -> None:
    hub = LiveHub(tmp_path)
    stream = open_frames(session_dir, hub)
    assert hub.subscriber_count() == 1
    stream.close()  # e.g. the client left before the status line was written
    assert hub.subscriber_count() == 0


def damage_last_frame(session_dir: Path) -> None:
    path = segments(session_dir)[-1]
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # the last payload byte of the last, complete frame
    path.write_bytes(bytes(data))


def events_client(data_dir: Path) -> falcon.testing.TestClient:
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(data_dir)})
    app = falcon.App(middleware=[RequestIdMiddleware()])
    web_errors.install(app)
    app.add_route("/v1/sessions/{session_id}/events",
                  EventsResource(settings, LiveHub(settings.data_path)))
    return falcon.testing.TestClient(app)


def test_a_session_whose_status_is_damaged_gets_no_stream_at_all(
    session_dir: Path, tmp_path: Path
) -> None:
    """The damage lies past the first Event, so only the status check can refuse in time."""
    damage_last_frame(session_dir)
    assert SessionReader(session_dir).status()["status"] == "damaged"
    client = events_client(tmp_path)
    for headers in ({"Accept": "text/event-stream"}, {}):
        result = client.simulate_get(f"/v1/sessions/{SESSION}/events", headers=headers)
        assert result.status_code == 500, result.text
        assert result.headers["Content-Type"].startswith("application/json")
        error = result.json["error"]
        assert error["code"] == "session_damaged"
        assert error["request_id"] == result.headers["X-Request-Id"]
