"""Async submission and live SSE following through the SDK, including a dropped connection."""

from __future__ import annotations

import socket

from brain.client import Brain, Event, ModelDelta, Receipt
from tests.client.conftest import collect
from tests.support.server import BrainServer


def test_submit_then_follow_until_turn_ended(brain: Brain, server: BrainServer) -> None:
    session = brain.create_session(model="stream")
    receipt = session.submit("go", idempotency_key="sdk-submit-1")
    assert receipt == Receipt(session.id, receipt.sequence)

    with session.follow(receipt.sequence - 1) as stream:
        seen = collect(stream, until="turn_ended")
    assert all(isinstance(e, Event) for e in seen)  # deltas are skipped unless asked for
    assert seen[0].kind == "turn_started" and seen[0].sequence == receipt.sequence
    assert seen[0].data["mode"] == "submit"
    assert [e.raw for e in seen] == server.events(session.id, after=receipt.sequence - 1)
    assert stream.cursor == seen[-1].sequence

    # The same key and mode is the retry of that submission, not a second turn.
    assert session.submit("go", idempotency_key="sdk-submit-1") == receipt


def test_follow_yields_deltas_without_a_sequence_when_asked(brain: Brain) -> None:
    session = brain.create_session(model="stream")
    with session.follow(0, deltas=True) as stream:
        receipt = session.submit("stream please")
        seen = collect(stream, until="turn_ended")
    deltas = [d for d in seen if isinstance(d, ModelDelta)]
    events = [e for e in seen if isinstance(e, Event)]
    [call_started] = [e for e in events if e.kind == "model_call_started"]
    assert "".join(d.delta for d in deltas) == "one two three four"
    assert {d.started for d in deltas} == {call_started.sequence}
    assert not hasattr(deltas[0], "sequence")
    sequences = [e.sequence for e in events]
    assert sequences == sorted(set(sequences)) and receipt.sequence in sequences


def test_follow_resumes_after_a_dropped_connection(brain: Brain, server: BrainServer) -> None:
    session = brain.create_session(model="stream")
    stream = session.follow(0, deltas=True)
    try:
        receipt = session.submit("keep going")
        before = collect(_until_first_delta(stream))
        # Cut the connection under the stream, mid model call, as a network failure would.
        stream._conn.socket.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]
        after = collect(stream, until="turn_ended")
    finally:
        stream.close()
    assert stream.reconnects == 1
    events = [e for e in before + after if isinstance(e, Event)]
    committed = server.events(session.id)
    # Nothing lost, nothing repeated: exactly the journal's public records, in order.
    assert [e.raw for e in events] == [e for e in committed if e["sequence"] <= events[-1].sequence]
    assert events[-1].kind == "turn_ended" and events[-1].data["started"] == receipt.sequence


def _until_first_delta(stream):  # type: ignore[no-untyped-def]
    for item in stream:
        yield item
        if isinstance(item, ModelDelta):
            return


def test_follow_ends_after_session_ended(brain: Brain) -> None:
    session = brain.create_session()
    assert session.send("hi").ok
    session.end()
    seen = collect(session.follow(0))  # no `until`: the stream must end by itself
    assert seen[-1].kind == "session_ended"
    assert seen == list(session.events())
