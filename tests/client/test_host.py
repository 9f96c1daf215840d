"""`brain.serve_host`: host Tools and Environments served by this test process (docs/host-tools.md).

The package's real server configures the host Tool `hosted`, the host Environment `remote` (with
`remote_shell` routed to its exec), and scripted models that call them. Every test starts its own
HostServer and stops it, so no host outlives its test.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from brain.client import Brain, HostCall, Session, current_call
from tests.client.conftest import collect
from tests.support.server import BrainServer
from tests.support.waiting import wait_for


def kinds_of(session: Session, kind: str) -> list[Any]:
    return [event for event in session.events() if event.kind == kind]


def finish(session: Session, sequence: int) -> Any:
    """The turn_ended or turn_failed Event of the turn `sequence` (followed live)."""
    seen = collect(session.follow(sequence - 1), until="turn_failed", timeout=30)
    return next(e for e in seen if e.kind in ("turn_ended", "turn_failed")
                and e.data["started"] == sequence)


def test_a_tool_handler_answers_the_turn_once(brain: Brain) -> None:
    seen: list[HostCall] = []

    def lookup(call: HostCall) -> dict:
        seen.append(call)
        word = call.input["word"]
        return {"content": {"meaning": word.upper()},
                "events": [{"kind": "looked_up", "data": {"word": word}}]}

    host = brain.serve_host(tools={"hosted": lookup})
    try:
        session = brain.create_session(model="hostcaller", tools=["hosted"])
        result = session.send("look it up")
    finally:
        assert host.stop()
    assert result.status == "ended" and result.output.startswith("tool results:")
    [started] = kinds_of(session, "tool_call_started")
    [ended] = kinds_of(session, "tool_call_ended")
    [call] = seen
    assert (call.kind, call.name, call.session_id, call.sequence, call.deadline) == \
        ("tool", "hosted", session.id, started.sequence, started.data["deadline"])
    assert ended.data["started"] == started.sequence
    assert ended.data["result"] == {"content": {"meaning": "HI"}, "is_error": False}
    [looked_up] = kinds_of(session, "looked_up")
    assert (looked_up.origin.kind, looked_up.origin.sequence) == ("tool", started.sequence)


def test_a_raising_handler_is_an_error_result(brain: Brain) -> None:
    def broken(call: HostCall) -> None:
        raise ValueError(f"no entry for {call.input['word']}")

    host = brain.serve_host(tools={"hosted": broken})
    try:
        session = brain.create_session(model="hostcaller", tools=["hosted"])
        assert session.send("look it up").status == "ended"
    finally:
        host.stop()
    [ended] = kinds_of(session, "tool_call_ended")
    assert ended.data["result"] == {"content": "no entry for hi", "is_error": True}


def test_cancelling_the_turn_fires_the_handlers_signal(brain: Brain) -> None:
    running = threading.Event()
    reasons: list[str | None] = []

    def patient(call: HostCall) -> str:
        running.set()
        assert current_call() is call
        if call.signal.wait(20):
            reasons.append(call.signal.reason)
            raise RuntimeError("stopped: Brain cancelled the call")
        return "never cancelled"

    host = brain.serve_host(tools={"hosted": patient})
    try:
        session = brain.create_session(model="hostcaller", tools=["hosted"])
        receipt = session.submit("wait for it")
        assert running.wait(20)
        assert session.interrupt().sequence is not None
        turn = finish(session, receipt.sequence)
    finally:
        host.stop()
    assert reasons == ["Brain cancelled the host call"]
    assert turn.kind == "turn_failed" and turn.data["error"]["code"] == "cancelled"
    [failed] = kinds_of(session, "tool_call_failed")
    assert failed.data["outcome"] == "cancelled"
    assert failed.data["result"]["content"] == "stopped: Brain cancelled the call"


def test_a_host_tool_drives_a_child_session_with_its_signal(brain: Brain) -> None:
    quick, slow = brain.create_session(), brain.create_session(model="slow")
    target = {"child": quick.id}
    child_results: list[Any] = []

    def delegate(call: HostCall) -> dict:
        child = call.brain.session(target["child"], fetch=False)  # a fresh, owning handle
        result = child.send("summarise", signal=call.signal)
        child_results.append(result)
        return {"content": result.output if result.status == "ended" else result.error.code,
                "is_error": result.status != "ended"}

    host = brain.serve_host(tools={"hosted": delegate})
    try:
        parent = brain.create_session(model="hostcaller", tools=["hosted"])
        assert parent.send("delegate").status == "ended"
        [ended] = kinds_of(parent, "tool_call_ended")
        assert ended.data["result"] == {"content": "echo: summarise", "is_error": False}

        target["child"] = slow.id
        receipt = parent.submit("delegate again")
        wait_for(lambda: (slow.refresh().turn or None) and slow.turn.status == "running",
                 timeout=20, what="the child's turn")
        parent.interrupt()
        turn = finish(parent, receipt.sequence)
    finally:
        host.stop()
    assert turn.data["error"]["code"] == "cancelled"
    cancelled_child = child_results[-1]
    assert cancelled_child.status == "failed" and cancelled_child.error.code == "cancelled"
    assert cancelled_child.cancel_request is not None  # the SDK cancelled the child's turn
    assert slow.refresh().turn.status == "failed"


class Remote:
    """A host Environment: each op is a method (docs/host-tools.md)."""

    def __init__(self) -> None:
        self.ops: list[Any] = []

    def setup(self) -> dict:
        self.ops.append("setup")
        return {"ready": True}

    def exec(self, request: dict) -> dict:
        self.ops.append(("exec", request["argv"]))
        return {"exit_code": 0, "stdout": "Hosted\n", "stderr": "", "truncated": False}

    def detach(self) -> None:
        self.ops.append("detach")

    def teardown(self) -> dict:
        self.ops.append("teardown")
        return {"removed": True}


class NoDetach:
    def setup(self) -> None:
        pass

    def teardown(self) -> None:
        pass


def test_a_host_environment_lives_with_its_session(brain: Brain) -> None:
    remote = Remote()
    host = brain.serve_host(environments={"remote": remote})
    try:
        session = brain.create_session(model="shellcaller", tools=["remote_shell"],
                                       environments=["remote"])
        assert session.status == "idle"
        result = session.send("run it")
        assert result.status == "ended" and "Hosted" in result.output
        assert session.end().status == "ended"
        ops = [(e.data["op"], e.kind) for e in session.events()
               if e.kind.startswith("environment_op_") and "op" in e.data]
        assert ops == [("setup", "environment_op_started"), ("detach", "environment_op_started")]
        assert len(kinds_of(session, "environment_op_ended")) == 2
        session.delete()
    finally:
        host.stop()
    assert remote.ops == ["setup", ("exec", ["uname"]), "detach", "teardown"]

    host = brain.serve_host(environments={"remote": NoDetach()})
    try:
        partial = brain.create_session(environments=["remote"])
        assert partial.end().status == "ended"  # a failed detach does not stop the end
        [failed] = kinds_of(partial, "environment_op_failed")
        assert "has no detach operation" in failed.data["error"]["message"]
        partial.delete()
    finally:
        host.stop()


def test_stop_releases_the_poll_so_the_next_host_gets_the_call(brain: Brain) -> None:
    first = brain.serve_host(tools={"hosted": lambda call: "first"})
    time.sleep(0.3)  # its long poll is waiting on the server now
    began = time.monotonic()
    assert first.stop()
    assert time.monotonic() - began < 1.5 and not first.running
    second = brain.serve_host(tools={"hosted": lambda call: "second"})
    try:
        session = brain.create_session(model="hostcaller", tools=["hosted"])
        assert session.send("who answers?").status == "ended"
    finally:
        second.stop()
    [ended] = kinds_of(session, "tool_call_ended")
    assert ended.data["result"]["content"] == "second"


def test_closing_the_client_stops_its_host_and_fires_running_signals(
    brain: Brain, server: BrainServer,
) -> None:
    owner = brain.with_token(server.token)
    running = threading.Event()
    reasons: list[str | None] = []

    def patient(call: HostCall) -> str:
        running.set()
        call.signal.wait(20)
        reasons.append(call.signal.reason)
        return "too late to answer"

    host = owner.serve_host(tools={"hosted": patient})
    session = brain.create_session(model="hostcaller", tools=["hosted"])
    receipt = session.submit("wait for it")
    assert running.wait(20)
    owner.close()
    wait_for(lambda: reasons, timeout=5, what="the handler's signal")
    assert reasons == ["the host server stopped"] and not host.running
    # The call was delivered and its host is gone: a cancel leaves it unknown after the grace.
    session.interrupt()
    turn = finish(session, receipt.sequence)
    assert turn.data["error"]["code"] == "cancelled"
    [failed] = kinds_of(session, "tool_call_failed")
    assert failed.data["outcome"] == "unknown"


def test_names_brain_does_not_serve_are_refused(brain: Brain) -> None:
    host = brain.serve_host(tools={"echo": lambda call: None})
    wait_for(lambda: not host.running, timeout=10, what="the refused host to stop")
    assert host.error is not None and host.error.code == "invalid_request"
    host.stop()


def test_what_a_host_could_never_serve_is_refused_when_it_is_made(brain: Brain) -> None:
    """Refused by serve_host itself (the same rules as AsyncBrain.serve_host), before any poll."""
    with pytest.raises(ValueError, match="at least one"):
        brain.serve_host()
    with pytest.raises(TypeError, match="'hosted' is not callable"):
        brain.serve_host(tools={"hosted": "not a function"})
    with pytest.raises(ValueError, match="wait_secs"):
        brain.serve_host(tools={"hosted": lambda call: None}, wait_secs=31)
    with pytest.raises(ValueError, match="max_concurrency"):
        brain.serve_host(tools={"hosted": lambda call: None}, max_concurrency=0)
