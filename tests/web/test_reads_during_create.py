"""Reads of a session caught half-way through its creation see `creating`, never 404.

The session actor makes `sessions/{id}/journal`, then the first segment (a temporary file
renamed into place), then commits `session_created`, and only then answers 201. The web reads
decide existence by the journal directory alone, so every later step reads as a session that
exists. Each window is set up here with the journal library and read the way a worker reads it;
a stream opened in a window then delivers `session_created` once the create goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import falcon
import falcon.testing
import pytest

from brain import errors
from brain.journal import JournalWriter
from brain.journal.segments import TEMP_SUFFIX, segment_name
from brain.settings import Settings
from brain.web import errors as web_errors
from brain.web.live_hub import LiveHub
from brain.web.middleware import RequestIdMiddleware
from brain.web.reads import reader, session_resource
from brain.web.resources.history import EventsResource, TranscriptResource
from brain.web.resources.sessions import list_sessions
from brain.web.sse import open_stream
from tests.journal.helpers import created

SESSION = "0190aabbccdd" + "00" * 10


def journal_dir(data_dir: Path) -> Path:
    return data_dir / "sessions" / SESSION / "journal"


def directory_only(data_dir: Path) -> None:
    journal_dir(data_dir).mkdir(parents=True)


def segment_being_created(data_dir: Path) -> None:
    directory_only(data_dir)
    (journal_dir(data_dir) / (segment_name(1) + TEMP_SUFFIX)).write_bytes(b"half a header")


def empty_segment(data_dir: Path) -> None:
    JournalWriter.open(journal_dir(data_dir)).close()


WINDOWS: dict[str, Callable[[Path], None]] = {
    "journal directory, no segment": directory_only,
    "segment not yet renamed into place": segment_being_created,
    "segment with no record yet": empty_segment,
}


def read_client(settings: Settings) -> falcon.testing.TestClient:
    app = falcon.App(middleware=[RequestIdMiddleware()])
    web_errors.install(app)
    app.add_route("/v1/sessions/{session_id}/events",
                  EventsResource(settings, LiveHub(settings.data_path)))
    app.add_route("/v1/sessions/{session_id}/transcript", TranscriptResource(settings))
    return falcon.testing.TestClient(app)


def first_event_frame(stream: Iterator[bytes], timeout: float = 10.0) -> bytes:
    """The next committed-Event frame; keep-alives come every 0.05 s, so no wait is long."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = next(stream)
        if frame.startswith(b"id: "):
            return frame
    raise AssertionError("no Event frame in time")


@pytest.mark.parametrize("window", WINDOWS)
def test_every_read_sees_a_session_being_created(tmp_path: Path, window: str) -> None:
    WINDOWS[window](tmp_path)
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(tmp_path)})
    assert session_resource(settings, SESSION)["status"] == "creating"
    client = read_client(settings)
    page = client.simulate_get(f"/v1/sessions/{SESSION}/events")
    assert (page.status_code, page.json["events"]) == (200, [])
    transcript = client.simulate_get(f"/v1/sessions/{SESSION}/transcript")
    assert (transcript.status_code, transcript.json["messages"]) == (200, [])
    # The stream's own checks, in the order EventsResource makes them before its 200.
    session_reader = reader(settings, SESSION)
    assert session_reader.damage() is None
    hub = LiveHub(settings.data_path)
    stream = open_stream(session_reader, journal_dir(tmp_path).parent, hub, SESSION, 0,
                         "req_test", keepalive_secs=0.05)
    try:
        assert next(stream) == b": stream open\n\n"
        with JournalWriter.open(journal_dir(tmp_path)) as writer:  # the create goes on
            writer.append([created()])
        assert first_event_frame(stream).startswith(b"id: 1\nevent: session_created\n")
    finally:
        stream.close()
    assert [s["id"] for s in list_sessions(settings, 10, None, None)["sessions"]] == [SESSION]


def test_the_first_commit_makes_the_session_idle(tmp_path: Path) -> None:
    with JournalWriter.open(journal_dir(tmp_path)) as writer:
        writer.append([created()])
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(tmp_path)})
    assert session_resource(settings, SESSION)["status"] == "idle"
    page = read_client(settings).simulate_get(f"/v1/sessions/{SESSION}/events")
    assert [e["kind"] for e in page.json["events"]] == ["session_created"]


def test_only_a_session_without_its_journal_directory_is_missing(tmp_path: Path) -> None:
    """Before the journal directory exists nobody holds the id: the 201 has not been sent."""
    (tmp_path / "sessions" / SESSION).mkdir(parents=True)
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(tmp_path)})
    with pytest.raises(errors.NotFound):
        session_resource(settings, SESSION)
    assert list_sessions(settings, 10, None, None)["sessions"] == []
