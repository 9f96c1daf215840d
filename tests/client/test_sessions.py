"""Creating sessions, synchronous sends, transcripts, Event pages and listing, via the SDK."""

from __future__ import annotations

from brain.client import Brain, Event, TurnResult
from tests.support.server import BrainServer
from tests.support.waiting import wait_for


def test_create_send_and_read_back(brain: Brain, server: BrainServer) -> None:
    session = brain.create_session(model="scripted", metadata={"owner": "sdk-test"})
    assert (session.status, session.last_sequence) == ("idle", 1)
    assert session.metadata == {"owner": "sdk-test"}
    assert session.config is not None and session.config["model"]["name"] == "scripted"

    result = session.send("hello")
    assert isinstance(result, TurnResult)
    assert (result.session_id, result.status, result.output) == (session.id, "ended",
                                                                 "echo: hello")
    assert result.ok and result.error is None

    transcript = session.transcript()
    assert [m["role"] for m in transcript.messages] == ["user", "assistant"]
    assert transcript.messages[0]["content"] == [{"type": "text", "text": "hello"}]
    raw_events = server.events(session.id)
    assert transcript.through_sequence == raw_events[-1]["sequence"]
    assert raw_events[-1]["kind"] == "turn_ended"
    assert raw_events[1] == {"sequence": result.sequence, "kind": "turn_started",
                             "at": raw_events[1]["at"], "data": raw_events[1]["data"]}


def test_events_read_every_page(brain: Brain, server: BrainServer) -> None:
    session = brain.create_session()
    for text in ("one", "two"):
        assert session.send(text).ok
    expected = server.events(session.id)
    assert len(expected) > 6

    paged = list(session.events(page_size=2))  # several pages, following next_after
    assert all(isinstance(e, Event) for e in paged)
    assert [e.raw for e in paged] == expected
    assert [(e.sequence, e.kind, e.at, e.data) for e in paged[:1]] == [
        (1, "session_created", expected[0]["at"], expected[0]["data"])]
    assert all(e.origin is None for e in paged)  # no extension Events in these turns

    cursor = expected[3]["sequence"]
    assert [e.sequence for e in session.events(cursor)] == [
        e["sequence"] for e in expected if e["sequence"] > cursor]
    page = session.events_page(after=0, limit=3)
    assert (len(page.events), page.has_more, page.next_after) == (3, True,
                                                                   page.events[-1].sequence)


def test_cached_state_changes_only_on_the_handles_own_calls(brain: Brain) -> None:
    session = brain.create_session()
    observer = brain.session(session.id)
    receipt = session.submit("in the background")
    wait_for(lambda: observer.refresh().turn and observer.turn.status == "ended",
             timeout=15, what="turn ended")
    # Background progress is not pushed into the first handle...
    assert (session.status, session.last_sequence, session.turn) == ("idle", 1, None)
    # ...until it asks.
    session.refresh()
    assert session.last_sequence == observer.last_sequence > receipt.sequence
    assert session.turn is not None and session.turn.sequence == receipt.sequence


def test_create_is_idempotent_and_seeds_a_transcript(brain: Brain) -> None:
    seed = [{"role": "user", "content": [{"type": "text", "text": "earlier"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "noted"}]}]
    first = brain.create_session(transcript=seed, idle_ttl_ms=0, idempotency_key="sdk-create-1")
    again = brain.create_session(transcript=seed, idle_ttl_ms=0, idempotency_key="sdk-create-1")
    assert again.id == first.id
    assert first.transcript().messages == seed
    assert first.config is not None and first.config["idle_ttl_ms"] == 0


def test_sessions_iterates_every_page(brain: Brain) -> None:
    created = [brain.create_session(metadata={"n": i}).id for i in range(3)]
    listed = [s.id for s in brain.sessions(limit=1)]  # one session per page
    assert len(listed) == len(set(listed))
    assert set(created) <= set(listed)
    assert [i for i in listed if i in created] == created[::-1]  # newest first

    ended = brain.session(created[0]).end()
    assert ended.status == "ended"
    assert created[0] in [s.id for s in brain.sessions(status="ended", limit=2)]
    assert all(s.status == "idle" for s in brain.sessions(status="idle"))
    assert created[0] not in [s.id for s in brain.sessions(status="idle")]
