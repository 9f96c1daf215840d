"""Cancelling a synchronous send through a CancelSignal (docs/concepts.md, "Sessions").

"The SDK waits for admission before cancelling and waits for any issued cancellation request
before returning": checked on the server's journal, where cancel_requested must follow the
turn's turn_started and name it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain.client import Brain, Cancelled, CancelSignal, Session, TurnResult
from tests.client.conftest import MODELS
from tests.support.server import BrainServer, serving
from tests.support.waiting import wait_for


def kinds(server: BrainServer, session_id: str) -> list[str]:
    return [e["kind"] for e in server.events(session_id)]


def assert_cancelled_after_admission(server: BrainServer, result: TurnResult) -> None:
    assert (result.status, result.error and result.error.code) == ("failed", "cancelled")
    assert result.cancel_request is not None and result.cancel_request.requested
    events = server.events(result.session_id)
    [started] = [e for e in events if e["kind"] == "turn_started"]
    [cancel] = [e for e in events if e["kind"] == "cancel_requested"]
    [failed] = [e for e in events if e["kind"] == "turn_failed"]
    assert started["sequence"] == result.sequence
    assert cancel["sequence"] == result.cancel_request.sequence
    assert cancel["data"]["turn"] == started["sequence"] < cancel["sequence"]
    assert failed["data"]["started"] == started["sequence"]
    assert failed["data"]["error"]["code"] == "cancelled"


def test_signal_cancels_a_slow_send(brain: Brain, server: BrainServer) -> None:
    session = brain.create_session(model="slow")
    signal = CancelSignal()
    # Fire once the model call is under way (the slow model answers only after 20 s).
    firing = threading.Thread(target=lambda: (
        wait_for(lambda: "model_call_started" in kinds(server, session.id), timeout=15,
                 what="model call"), signal.cancel("owner cancelled")), daemon=True)
    firing.start()
    started = time.monotonic()
    result = session.send("take your time", signal=signal)
    firing.join(timeout=15)
    assert time.monotonic() - started < 10
    assert_cancelled_after_admission(server, result)
    assert session.refresh().status == "idle"  # the session stays usable
    assert signal.reason == "owner cancelled"


@pytest.fixture
def pausing_server(tmp_path: Path) -> Iterator[BrainServer]:
    """Keyed requests pause 1 s between their claim and their work: admission comes late."""
    yield from serving(tmp_path, MODELS, {"BRAIN_TEST_PAUSE_AFTER_CLAIM_SECS": "1"})


def test_a_signal_fired_before_admission_waits_for_turn_started(
        pausing_server: BrainServer) -> None:
    server = pausing_server
    with Brain(server.url, server.token, timeout=20, turn_timeout=40) as brain:
        session = brain.create_session(model="slow")
        signal = CancelSignal()
        before_admission: list[list[str]] = []

        def fire_early() -> None:
            time.sleep(0.3)  # the send is sent and claimed, but its turn has not started
            before_admission.append(kinds(server, session.id))
            signal.cancel()

        firing = threading.Thread(target=fire_early, daemon=True)
        firing.start()
        result = session.send("cancel me early", signal=signal)
        firing.join(timeout=15)
    assert before_admission == [["session_created"]]  # fired before the turn existed
    assert_cancelled_after_admission(server, result)


def test_a_signal_fired_before_sending_sends_nothing(brain: Brain, server: BrainServer) -> None:
    session = brain.create_session()
    signal = CancelSignal()
    signal.cancel()
    with pytest.raises(Cancelled):
        session.send("never sent", signal=signal)
    assert kinds(server, session.id) == ["session_created"]


def test_an_unfired_signal_changes_nothing(brain: Brain, server: BrainServer) -> None:
    session: Session = brain.create_session()
    result = session.send("quick", signal=CancelSignal())
    assert (result.status, result.output, result.cancel_request) == ("ended", "echo: quick", None)
    assert "cancel_requested" not in kinds(server, session.id)
