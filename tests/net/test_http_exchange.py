"""brain/net/http_exchange.py against real sockets: every phase, cancelled, timed out or failed.

Each stop must say where it happened (`phase`, and so `sent`), because callers journal
"nothing happened" for a request that was not fully written and "cannot know" afterwards.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from brain.net.http_exchange import (
    POLL_S,
    Cause,
    Exchange,
    ExchangeFailed,
    Limits,
    Origin,
    Phase,
)
from tests.models.fakes import BlackHole, json_answer, never_read, refused_port
from tests.models.helpers import cancel_after

BIG = b"x" * (32 << 20)  # more than any socket buffer holds: the write has to block
JSON = {"Content-Type": "application/json"}
PROMPT = POLL_S + 0.25  # a cancel or limit is noticed within one poll, plus a loaded machine


def origin_of(server) -> Origin:
    return Origin(server.url.startswith("https"), "127.0.0.1", server.port)


def exchange(where: Origin, limits: Limits | None = None, cancel=None, tls=None) -> Exchange:
    return Exchange(where, limits or Limits(), cancel or threading.Event(), tls)


def stop_of(where: Origin, body: bytes = b"{}", **kwargs) -> ExchangeFailed:
    with pytest.raises(ExchangeFailed) as info, exchange(where, **kwargs) as x:
        x.request("POST", "/v1/call", JSON, body)
        x.read_body(1 << 20)
    return info.value


def in_time(started: float, seconds: float) -> bool:
    return time.monotonic() - started < seconds


def sleeper(seconds: float):
    """Read the request, then say nothing."""
    return lambda wire: wire.sleep(seconds)


# -- a whole exchange ----------------------------------------------------------------------------


def test_request_shape_and_content_length_body(server):
    server.answer(json_answer(200, {"ok": True}))
    with exchange(origin_of(server)) as x:
        x.request("POST", "/v1/call?x=1", {**JSON, "X-Extra": "yes"}, b'{"q": 1}')
        assert (x.status, x.header("content-type")) == (200, "application/json")
        assert json.loads(x.read_body(1 << 20)) == {"ok": True}
    (req,) = server.requests
    assert (req.method, req.path, req.body) == ("POST", "/v1/call?x=1", {"q": 1})
    assert req.headers["host"] == f"127.0.0.1:{server.port}"
    assert req.headers["content-length"] == "8" and req.headers["x-extra"] == "yes"
    assert req.headers["connection"] == "close"


def test_chunked_body_held_open_is_complete_without_eof(server):
    def chunked(wire):
        wire.head(200, {}, chunked=True)
        wire.body(b'{"a":')
        wire.body(b' 1}')
        wire.end()
        wire.sleep(10)  # keeps the connection open: the framing, not EOF, ends the body

    server.answer(chunked)
    started = time.monotonic()
    with exchange(origin_of(server)) as x:
        x.request("POST", "/", JSON, b"{}")
        assert x.read_body(100) == b'{"a": 1}'
    assert in_time(started, 2)


def test_close_delimited_body(server):
    def http10(wire):
        wire.sock.sendall(b"HTTP/1.0 200 OK\r\n\r\nuntil the end")
        wire.sock.close()

    server.answer(http10)
    with exchange(origin_of(server)) as x:
        x.request("POST", "/", JSON, b"{}")
        assert x.read_body(100) == b"until the end"


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_cut_short_failed_after_sending(server, chunked):
    def cut(wire):
        if chunked:
            wire.head(200, {}, chunked=True)
            wire.body(b"part")
        else:
            wire.head(200, {"Content-Length": "100"})
            wire.body(b"part")
        wire.sock.close()

    server.answer(cut)
    stop = stop_of(origin_of(server))
    assert (stop.cause, stop.phase, stop.sent) == (Cause.FAILED, Phase.RESPONSE, True)


def test_a_body_over_the_limit_fails_after_sending(server):
    server.answer(json_answer(200, None, raw=b"y" * 5000))
    with pytest.raises(ExchangeFailed) as info, exchange(origin_of(server)) as x:
        x.request("POST", "/", JSON, b"{}")
        x.read_body(1000)
    assert info.value.sent and "larger than 1000" in info.value.message


def test_sse_events_across_chunk_and_segment_boundaries(server):
    stream = (b": hello\r\n" b"event: one\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n"
              b"id: 9\rdata: bare CR\r\r" b"data: last\n\n")

    cuts = (0, 3, 20, 21, 40, 50, 51, 60, len(stream))  # splits lines, CRLFs and events

    def dribble(wire):
        wire.head(200, {"Content-Type": "text/event-stream"}, chunked=True)
        for start, end in zip(cuts, cuts[1:], strict=False):
            wire.body(stream[start:end])
            wire.sleep(0.01)  # separate TCP segments, separate reads
        wire.end()

    server.answer(dribble)
    with exchange(origin_of(server)) as x:
        x.request("POST", "/", JSON, b"{}")
        events = [(e.event, e.data, e.id) for e in x.events()]
    assert events == [("one", '{"a":\n1}', None), ("message", "bare CR", "9"),
                      ("message", "last", None)]


def test_tls_exchange_with_a_private_ca(tls_server, trusting):
    tls_server.answer(json_answer(200, {"secure": True}))
    with exchange(origin_of(tls_server), tls=trusting) as x:
        x.request("POST", "/", JSON, b'{"over": "tls"}')
        assert json.loads(x.read_body(100)) == {"secure": True}
    assert tls_server.requests[0].body == {"over": "tls"}


def test_an_untrusted_certificate_fails_in_tls_and_sends_nothing(tls_server):
    stop = stop_of(origin_of(tls_server))
    assert (stop.cause, stop.phase, stop.sent) == (Cause.FAILED, Phase.TLS, False)
    assert "TLS" in stop.message
    assert tls_server.requests == []


# -- failures before and after the last byte -----------------------------------------------------


def test_a_refused_connect_fails_in_connect():
    stop = stop_of(Origin(False, "127.0.0.1", refused_port()))
    assert (stop.cause, stop.phase, stop.sent) == (Cause.FAILED, Phase.CONNECT, False)
    assert "cannot connect" in stop.message


def test_a_header_that_could_split_the_request_is_refused_before_connecting(server):
    with pytest.raises(ExchangeFailed) as info, exchange(origin_of(server)) as x:
        x.request("POST", "/", {"Authorization": "Bearer k\r\nX-Injected: 1"}, b"{}")
    stop = info.value
    assert (stop.cause, stop.sent) == (Cause.FAILED, False)
    assert "Bearer" not in stop.message and "Injected" not in stop.message
    time.sleep(0.1)
    assert server.requests == []


def test_a_reset_while_writing_fails_in_send(server):
    def reset_early(wire):
        wire.sock.recv(1024)
        wire.reset()

    reset_early.before_request = True
    server.answer(reset_early)
    stop = stop_of(origin_of(server), body=BIG, limits=Limits(deadline=time.monotonic() + 20))
    assert (stop.cause, stop.phase, stop.sent) == (Cause.FAILED, Phase.SEND, False)


def test_a_close_after_the_request_without_answer_fails_after_sending(server):
    server.answer(lambda wire: wire.sock.close())
    stop = stop_of(origin_of(server))
    assert (stop.cause, stop.phase, stop.sent) == (Cause.FAILED, Phase.RESPONSE, True)
    assert "no answer" in stop.message


# -- cancel in every phase -----------------------------------------------------------------------


def test_cancel_before_connect_connects_nowhere(server):
    cancel = threading.Event()
    cancel.set()
    stop = stop_of(origin_of(server), cancel=cancel)
    assert (stop.cause, stop.phase) == (Cause.CANCELLED, Phase.CONNECT)
    time.sleep(0.1)
    assert server.requests == []


def test_cancel_during_connect():
    hole = BlackHole()
    try:
        cancel = cancel_after(0.2)
        stop = stop_of(Origin(False, "127.0.0.1", hole.port), cancel=cancel)
        assert cancel.stopped_within(PROMPT)
    finally:
        hole.close()
    assert (stop.cause, stop.phase, stop.sent) == (Cause.CANCELLED, Phase.CONNECT, False)


def test_cancel_during_the_tls_handshake(server):
    server.answer(never_read())
    cancel = cancel_after(0.2)
    stop = stop_of(Origin(True, "127.0.0.1", server.port), cancel=cancel)
    assert cancel.stopped_within(PROMPT)
    assert (stop.cause, stop.phase, stop.sent) == (Cause.CANCELLED, Phase.TLS, False)


def test_cancel_after_a_partial_write(server):
    server.answer(never_read())
    cancel = cancel_after(0.3)
    stop = stop_of(origin_of(server), body=BIG, cancel=cancel)
    assert cancel.stopped_within(PROMPT)
    assert (stop.cause, stop.phase, stop.sent) == (Cause.CANCELLED, Phase.SEND, False)


def test_cancel_after_the_full_write(server):
    server.answer(sleeper(10))
    cancel = cancel_after(0.2)
    stop = stop_of(origin_of(server), cancel=cancel)
    assert cancel.stopped_within(PROMPT)
    assert (stop.cause, stop.phase, stop.sent) == (Cause.CANCELLED, Phase.RESPONSE, True)
    assert len(server.requests) == 1


def test_cancel_while_the_body_flows(server):
    def stall(wire):
        wire.head(200, {"Content-Type": "text/event-stream"}, chunked=True)
        wire.body(b"data: first\n\n")
        wire.sleep(10)

    server.answer(stall)
    cancel = threading.Event()
    with pytest.raises(ExchangeFailed) as info, exchange(origin_of(server), cancel=cancel) as x:
        x.request("POST", "/", JSON, b"{}")
        for event in x.events():
            assert event.data == "first"
            threading.Timer(0.1, cancel.set).start()
    assert (info.value.cause, info.value.sent) == (Cause.CANCELLED, True)


# -- each limit in its phase ---------------------------------------------------------------------


def timed_out(where: Origin, limits: Limits, body: bytes = b"{}") -> tuple[ExchangeFailed, float]:
    started = time.monotonic()
    stop = stop_of(where, body=body, limits=limits)
    assert stop.cause is Cause.TIMED_OUT
    return stop, time.monotonic() - started


def test_connect_limit():
    hole = BlackHole()
    try:
        stop, took = timed_out(Origin(False, "127.0.0.1", hole.port), Limits(connect_s=0.3))
    finally:
        hole.close()
    assert (stop.phase, stop.limit, stop.sent) == (Phase.CONNECT, "connect_s", False)
    assert 0.3 <= took < 0.3 + PROMPT


def test_connect_limit_covers_the_tls_handshake(server):
    server.answer(never_read())
    stop, took = timed_out(Origin(True, "127.0.0.1", server.port), Limits(connect_s=0.3))
    assert (stop.phase, stop.limit, stop.sent) == (Phase.TLS, "connect_s", False)
    assert 0.3 <= took < 0.3 + PROMPT


def test_a_stalled_write_past_idle_is_not_sent(server):
    server.answer(never_read())
    stop, took = timed_out(origin_of(server), Limits(idle_s=0.3), body=BIG)
    assert (stop.phase, stop.limit, stop.sent) == (Phase.SEND, "idle_s", False)
    assert stop.message == "timed out writing the request"


def test_first_byte_limit_runs_from_the_last_request_byte(server):
    server.answer(json_answer(200, {}, delay=5))
    stop, took = timed_out(origin_of(server), Limits(first_byte_s=0.3, idle_s=10))
    assert (stop.phase, stop.limit, stop.sent) == (Phase.RESPONSE, "first_byte_s", True)
    assert 0.3 <= took < 0.3 + PROMPT


def test_idle_limit_between_body_reads(server):
    def stall(wire):
        wire.head(200, {}, chunked=True)
        wire.body(b"some")
        wire.sleep(10)

    server.answer(stall)
    stop, _ = timed_out(origin_of(server), Limits(first_byte_s=10, idle_s=0.3))
    assert (stop.phase, stop.limit, stop.sent) == (Phase.RESPONSE, "idle_s", True)


@pytest.mark.parametrize("phase", [Phase.CONNECT, Phase.SEND, Phase.RESPONSE])
def test_the_overall_deadline_in_each_phase(server, phase):
    if phase is Phase.CONNECT:
        hole = BlackHole()
        where, body = Origin(False, "127.0.0.1", hole.port), b"{}"
    else:
        server.answer(never_read() if phase is Phase.SEND else sleeper(10))
        hole, where, body = None, origin_of(server), BIG if phase is Phase.SEND else b"{}"
    try:
        limits = Limits(connect_s=10, first_byte_s=10, idle_s=10,
                        deadline=time.monotonic() + 0.4)
        stop, took = timed_out(where, limits, body=body)
    finally:
        if hole is not None:
            hole.close()
    assert (stop.phase, stop.limit) == (phase, "deadline")
    assert 0.4 <= took < 0.4 + PROMPT


def test_a_deadline_already_past_connects_nowhere(server):
    stop, _ = timed_out(origin_of(server), Limits(deadline=time.monotonic() - 1))
    assert (stop.phase, stop.limit) == (Phase.CONNECT, "deadline")
    time.sleep(0.1)
    assert server.requests == []
