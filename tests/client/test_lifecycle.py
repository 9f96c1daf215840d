"""Errors, end, delete, session tokens and the client's own lifetime (close, with_token)."""

from __future__ import annotations

import threading
import time

import pytest

from brain.client import (
    Brain,
    BrainAPIError,
    ClientClosed,
    Forbidden,
    NotFound,
    SessionActive,
    SessionEnded,
    Unauthorized,
)
from tests.client.conftest import collect
from tests.support.server import BrainServer


def test_api_errors_carry_the_contract_fields(brain: Brain) -> None:
    with pytest.raises(NotFound) as missing:
        brain.session("no-such-session")
    error = missing.value
    assert isinstance(error, BrainAPIError)
    assert (error.status, error.code, error.message) == (404, "not_found", "no such session")
    assert error.request_id is not None and error.request_id.startswith("req_")

    with brain.with_token("not-a-valid-token") as stranger, pytest.raises(Unauthorized) as bad:
        list(stranger.sessions())
    assert (bad.value.status, bad.value.code) == (401, "unauthorized")


def test_end_then_send_is_session_ended_and_delete_removes(brain: Brain,
                                                             server: BrainServer) -> None:
    session = brain.create_session()
    with pytest.raises(SessionActive) as active:
        session.delete()
    assert (active.value.status, active.value.code) == (409, "session_active")

    assert session.end(idempotency_key="sdk-end-1") is session
    assert session.status == "ended"  # the handle's own call updated its cache
    with pytest.raises(SessionEnded) as ended:
        session.send("too late")
    assert (ended.value.status, ended.value.code) == (409, "session_ended")
    assert ended.value.request_id

    session.delete(idempotency_key="sdk-delete-1")
    assert server.request("GET", f"/v1/sessions/{session.id}").status_code == 404
    with pytest.raises(NotFound):
        session.refresh()
    with pytest.raises(NotFound):
        list(session.follow(0))


def test_session_token_reaches_only_its_session(brain: Brain) -> None:
    session = brain.create_session()
    token = session.create_token()
    with brain.with_token(token) as scoped:
        assert scoped.session(session.id).send("scoped").output == "echo: scoped"
        with pytest.raises(Forbidden):
            list(scoped.sessions())
        with pytest.raises(NotFound):
            scoped.session(brain.create_session().id)


def test_close_is_idempotent_and_rejects_later_operations(server: BrainServer) -> None:
    client = Brain(server.url, server.token, timeout=20)
    session = client.create_session()
    assert session.send("before close").ok
    client.close()
    client.close()  # idempotent
    assert client.closed

    operations = [
        lambda: client.create_session(),
        lambda: client.session(session.id),
        lambda: client.sessions(),
        lambda: client.with_token(server.token),
        lambda: session.send("after close"),
        lambda: session.submit("after close"),
        lambda: session.refresh(),
        lambda: session.transcript(),
        lambda: session.events(),
        lambda: session.follow(),
        lambda: session.interrupt(),
        lambda: session.end(),
    ]
    for operation in operations:
        with pytest.raises(ClientClosed):
            operation()

    # Closing did not touch the stored session.
    with Brain(server.url, server.token) as other:
        assert other.session(session.id).status == "idle"


def test_closing_during_iteration_raises_client_closed(server: BrainServer) -> None:
    client = Brain(server.url, server.token, timeout=20)
    session = client.create_session()
    assert session.send("one").ok
    pages = session.events(page_size=1)
    assert next(pages).kind == "session_created"
    stream = session.follow(0)
    assert next(stream).kind == "session_created"
    client.close()
    with pytest.raises(ClientClosed):
        next(pages)
    with pytest.raises(ClientClosed):
        next(stream)


def test_close_wakes_a_blocked_stream(server: BrainServer) -> None:
    client = Brain(server.url, server.token, stream_timeout=20)
    session = client.create_session()
    stream = session.follow(1)  # nothing after 1 yet: the reader blocks on the socket
    failures: list[BaseException] = []

    def read() -> None:
        try:
            next(stream)
        except BaseException as exc:
            failures.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.3)
    started = time.monotonic()
    client.close()
    reader.join(timeout=5)
    assert not reader.is_alive()
    assert time.monotonic() - started < 5
    assert len(failures) == 1 and isinstance(failures[0], ClientClosed)


def test_closing_the_stream_from_another_thread_stops_a_blocked_iteration(
        server: BrainServer) -> None:
    """EventStream.close() alone (the client stays open): the reader's loop just ends."""
    with Brain(server.url, server.token, stream_timeout=20) as client:
        session = client.create_session()
        stream = session.follow(1, deltas=True)  # nothing after 1 yet: the reader blocks
        outcome: list[object] = []

        def read() -> None:
            try:
                outcome.append(list(stream))
            except BaseException as exc:
                outcome.append(exc)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        time.sleep(0.3)
        stream.close()
        reader.join(timeout=5)
        assert not reader.is_alive()
        assert outcome == [[]], outcome
        assert session.send("still usable").ok


def test_with_token_client_survives_the_parents_close(server: BrainServer) -> None:
    with Brain(server.url, server.token) as parent:
        session = parent.create_session()
        child = parent.with_token(session.create_token())
    assert parent.closed and not child.closed
    try:
        handle = child.session(session.id)
        assert handle.send("still here").output == "echo: still here"
        assert collect(handle.events())[-1].kind == "turn_ended"
    finally:
        child.close()
    with pytest.raises(ClientClosed):
        handle.refresh()
