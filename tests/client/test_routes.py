"""The SDK's core, without a server: request descriptions (brain/client/routes.py) and the host
servers' decisions (brain/client/host_loop.py). Both shells only carry these out, so what is
checked here holds for the sync and the asyncio client at once."""

from __future__ import annotations

import json

import pytest

from brain.client import routes
from brain.client.errors import (
    ClientClosed,
    Forbidden,
    RequestTimeout,
    SessionBusy,
    TransportError,
)
from brain.client.host import HostCall
from brain.client.host_loop import BUSY_WAIT_SECS, FIRST_BACKOFF_SECS, MAX_BACKOFF_SECS, HostLoop
from brain.client.routes import Response, Timeouts

TIMEOUTS = Timeouts(connect=1, request=2, turn=3, stream=4)
PATH = routes.session_path("s/1")


def ok(body: object, status: int = 200) -> Response:
    return Response(status, {}, json.dumps(body).encode())


def test_each_request_is_described_once() -> None:
    assert PATH == "/v1/sessions/s%2F1"
    send = routes.send(PATH, "hi", "k-1", None)
    assert (send.method, send.path, send.seconds(TIMEOUTS)) == ("POST", PATH + "/messages", 3)
    assert send.encode() == (b'{"input":"hi"}', {"Content-Type": "application/json",
                                                  "Idempotency-Key": "k-1"})
    assert routes.send(PATH, "hi", None, 7.5).seconds(TIMEOUTS) == 7.5
    submit = routes.submit(PATH, "hi", "k-2")
    assert submit.encode()[1]["Prefer"] == "respond-async" and submit.seconds(TIMEOUTS) == 2
    assert routes.delete(PATH, None).seconds(TIMEOUTS) == 3  # waits for teardown
    assert routes.end(PATH, None, None).seconds(TIMEOUTS) == 3
    assert routes.get_session(PATH).encode() == (None, {})
    page = routes.events_page(PATH, 5, None)
    assert page.query == {"after": 5, "limit": None}
    assert page.answer(ok({"events": [], "next_after": 5, "has_more": False})).has_more is False
    assert routes.create_token(PATH).answer(ok({"token": "t"})) == "t"


def test_a_create_body_holds_only_the_fields_given() -> None:
    call = routes.create_session({"model": "m", "tools": None, "metadata": {"a": 1}}, "k")
    assert call.body == {"model": "m", "metadata": {"a": 1}}
    with pytest.raises(TypeError):
        routes.create_session({"surprise": 1}, None)


def test_a_bad_key_fails_before_sending_and_an_error_answer_raises() -> None:
    with pytest.raises(ValueError):
        routes.cancel(PATH, "no spaces allowed").encode()
    busy = ok({"error": {"code": "session_busy", "message": "m", "request_id": "r"}}, 409)
    with pytest.raises(SessionBusy):
        routes.send(PATH, "hi", None, None).answer(busy)


def test_what_may_be_resent_and_what_a_failure_means() -> None:
    assert routes.may_resend("GET", {})
    assert routes.may_resend("POST", {"Idempotency-Key": "k"})
    assert not routes.may_resend("POST", {})
    refused = routes.lost("POST /x", phase="connect", timed_out=False, wait=1, key="k",
                          cause=OSError())
    assert type(refused) is TransportError and not refused.maybe_applied
    late = routes.lost("POST /x", phase="answer", timed_out=True, wait=1, key="k",
                       cause=TimeoutError())
    assert isinstance(late, RequestTimeout) and late.maybe_applied
    assert late.idempotency_key == "k"


def call(kind: str = "tool", name: str = "t", op: str | None = None) -> HostCall:
    item = {"call_id": "c1", "kind": kind, "name": name, "session_id": "s", "sequence": 3,
            "op": op, "request": {"argv": ["ls"]}, "input": {"x": 1}}
    return HostCall.from_json(item, None)  # type: ignore[arg-type]


class Env:
    def exec(self, request: dict) -> dict:
        return {"ran": request["argv"]}

    def setup(self) -> None:
        return None


def test_the_host_loop_polls_for_its_free_slots() -> None:
    loop = HostLoop("h", {"t": print}, {"e": Env()}, 20, 2)
    first = loop.poll(running=0)
    assert first.body == {"tools": ["t"], "environments": ["e"], "wait_secs": 20,
                          "max_calls": 2, "host_id": "h"}
    busy = loop.poll(running=2)
    assert (busy.body["max_calls"], busy.body["wait_secs"]) == (0, BUSY_WAIT_SECS)
    assert loop.release().body["wait_secs"] == 0
    assert loop.answered({"calls": [{"call_id": "c"}], "cancel": ["d"]}) == \
        ([{"call_id": "c"}], ["d"])


def test_the_host_loop_backs_off_stops_and_remembers_a_refusal() -> None:
    loop = HostLoop("h", {"t": print}, None, 20, 2)
    lost = TransportError("down", maybe_applied=False)
    pauses = [loop.failed(lost, stopping=False) for _ in range(6)]
    assert pauses[0] == FIRST_BACKOFF_SECS and pauses[-1] == MAX_BACKOFF_SECS
    loop.answered({})
    assert loop.failed(lost, stopping=False) == FIRST_BACKOFF_SECS
    assert loop.failed(lost, stopping=True) is None
    assert loop.failed(ClientClosed("closed"), stopping=False) is None
    refusal = Forbidden(403, "forbidden", "no")
    assert loop.failed(refusal, stopping=False) is None and loop.error is refusal


def test_the_host_loop_plans_each_call_and_its_answers() -> None:
    loop = HostLoop("h", {"t": lambda c: c.input}, {"e": Env()}, 20, 2)
    assert loop.job(call(name="other"))["is_error"] is True  # type: ignore[index]
    job = loop.job(call())
    assert not isinstance(job, dict) and job.returned({"x": 1}) == {"content": {"x": 1},
                                                                     "is_error": False}
    assert job.raised(ValueError("bad")) == {"content": "bad", "is_error": True}
    tool = call()
    tool.signal.cancel("Brain cancelled the host call")
    assert loop.job(tool).raised(RuntimeError()) == {  # type: ignore[union-attr]
        "content": "RuntimeError", "is_error": True, "outcome": "cancelled"}
    env = loop.job(call("environment", "e", "exec"))
    assert not isinstance(env, dict) and env.args == ({"argv": ["ls"]},)
    assert env.returned(env.function(*env.args)) == {"result": {"ran": ["ls"]}}
    setup = loop.job(call("environment", "e", "setup"))
    assert not isinstance(setup, dict) and setup.args == ()
    assert setup.returned(None) == {"result": {}}
    assert "error" in loop.job(call("environment", "e", "read"))  # no read method


def test_the_stream_state_decides_each_step_and_each_answer() -> None:
    from brain.client.errors import Unauthorized
    from brain.client.stream_state import CONNECT, ITEM, READ, STOP, StreamState

    state = StreamState(after=0, deltas=False, max_reconnects=1, backoff_secs=0.1)
    assert state.next_step(connected=False) == CONNECT
    with pytest.raises(Unauthorized):  # the first connection's refusal is raised, not retried
        state.answered(401, {}, b'{"error": {"code": "unauthorized", "message": "m"}}')
    assert state.answered(200, {}, b"") and state.next_step(connected=True) == READ
    state.feed(b'id: 1\nevent: session_created\ndata: {"sequence": 1, "kind": '
               b'"session_created", "data": {}}\n\n')
    assert state.next_step(connected=True) == ITEM and state.pending.popleft().sequence == 1
    state.dropped(None)
    assert state.pause_before_connect() == 0.1
    assert not state.answered(404, {}, b"")  # deleted while away: the stream is over
    assert state.next_step(connected=False) == STOP
