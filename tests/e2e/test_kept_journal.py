"""A released session's next open on the same actor takes up the writer it kept
(brain/actors/session/kept_journal.py), and refuses it when anything else wrote the journal
meanwhile:
here a web worker admitting a submitted turn with no actor on the session. One actor serves
the whole server, so every open of the session is that actor's; `brain_journal_opens_total`
says which kind each was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from brain.journal import JournalScan, JournalWriter
from tests.support.metrics_scrape import scrape, value
from tests.support.server import BrainServer, configured
from tests.support.waiting import wait_for


@pytest.fixture
def one_actor(tmp_path: Path) -> Iterator[BrainServer]:
    server = configured(tmp_path, "", {"BRAIN_SESSION_POOL_SIZE": "1",
                                       "BRAIN_MAX_SESSION_ACTORS": "1"}).start()
    try:
        yield server
    finally:
        server.kill()


def opens(server: BrainServer) -> tuple[float, float]:
    _, samples = scrape(server)
    return (value(samples, "brain_journal_opens_total", how="kept") or 0.0,
            value(samples, "brain_journal_opens_total", how="recovered") or 0.0)


def no_actor_holds_it(server: BrainServer) -> bool:
    _, samples = scrape(server)
    return value(samples, "brain_session_actors_open") == 0


def test_a_kept_writer_is_taken_up_unless_the_web_admitted_a_turn(one_actor: BrainServer) -> None:
    s = one_actor
    sid = s.create_session()["id"]
    assert s.send(sid, "one")["output"] == "echo: one"
    wait_for(lambda: opens(s) == (1.0, 1.0), timeout=20, interval=0.2,
             what="create recovered, the first send took up the kept writer")
    wait_for(lambda: no_actor_holds_it(s), timeout=20, interval=0.2, what="the release reported")
    resp = s.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "two"},
                     headers={"Prefer": "respond-async"}, timeout=30)
    assert resp.status_code == 202, resp.text
    wait_for(lambda: s.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle",
             timeout=30, interval=0.2, what="the submitted turn ended")
    wait_for(lambda: opens(s)[1] == 2.0, timeout=20, interval=0.2,
             what="the admitted turn's open refused the kept writer: a full open")
    wait_for(lambda: no_actor_holds_it(s), timeout=20, interval=0.2, what="the release reported")
    kept_before = wait_for(lambda: opens(s)[0], timeout=20, interval=0.2, what="metrics")
    assert s.send(sid, "three")["output"] == "echo: three"
    wait_for(lambda: opens(s) == (kept_before + 1, 2.0), timeout=20, interval=0.2,
             what="the next send took up the writer kept after the admitted turn")

    journal = s.data_dir / "sessions" / sid / "journal"
    frames = list(JournalScan(journal))  # every byte verified
    started = [f for f in frames if f.record["kind"] == "turn_started"]
    assert [f.record["input"] for f in started] == ["one", "two", "three"]
    assert started[1].header.end_of_batch  # committed alone: the web worker admitted it
    assert not started[2].header.end_of_batch  # with its activation_started: by the actor
    assert [f.seq for f in frames] == list(range(1, len(frames) + 1))
    texts = [m["content"][0]["text"] for m in
             s.request("GET", f"/v1/sessions/{sid}/transcript").json()["messages"]]
    assert texts == ["one", "echo: one", "two", "echo: two", "three", "echo: three"]
    with JournalWriter.open(journal, project=True) as writer:  # a full recovery agrees
        assert writer.opened.last_seq == frames[-1].seq and writer.opened.status == "idle"


NAPPER = """
[models.napper]
provider = "scripted"
script = [
  { tool_calls = [ { name = "nap", input = { seconds = 0.3 } } ], delay_ms = 200 },
  { text = "rested", delay_ms = 200 },
]

[tools.nap]
route = "builtin"
function = "sleep"
description = "Sleep for `seconds`."
"""


def test_a_suspended_turn_resumes_from_what_its_actor_kept(tmp_path: Path) -> None:
    """Two sessions take turns on one actor, each turn suspended three times (two model calls
    and a Tool call, each parked at once): every open after the creates takes up what the actor
    kept at the last release of that session, suspended turn and history included, and the
    turns end as a full recovery of their journals says."""
    server = configured(tmp_path, NAPPER, {"BRAIN_SESSION_POOL_SIZE": "1",
                                           "BRAIN_MAX_SESSION_ACTORS": "1",
                                           "BRAIN_SUSPEND_AFTER_MS": "0"}).start()
    try:
        ids = [server.create_session(model="napper", tools=["nap"])["id"] for _ in range(2)]
        wait_for(lambda: opens(server) == (0.0, 2.0), timeout=20, interval=0.2,
                 what="two creates, each a full open")
        for sid in ids + ids:
            assert server.send(sid, "hi")["output"] == "rested"
        # each turn: its message, then three outcomes, each resuming the suspended turn
        wait_for(lambda: opens(server) == (16.0, 2.0), timeout=20, interval=0.2,
                 what="every open of a turn took up the kept journal")
        for sid in ids:
            journal = server.data_dir / "sessions" / sid / "journal"
            kinds = [frame.record["kind"] for frame in JournalScan(journal)]
            assert kinds.count("turn_ended") == 2 and kinds.count("tool_call_ended") == 2
            assert kinds.count("model_call_started") == 4 == kinds.count("model_call_ended")
            with JournalWriter.open(journal, project=True) as writer:
                assert writer.opened.status == "idle" and writer.opened.open_turn is None
    finally:
        server.kill()
