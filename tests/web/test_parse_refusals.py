"""How requests refused below the app are told (brain/web/errors.py `refusal`), without a
server: statuses, codes, and messages that never reveal the server's own faults."""

from __future__ import annotations

import json

from gunicorn.http import errors as parse_errors

from brain import errors
from brain.web.errors import DETAIL_CHARS, raw_error_response, refusal
from brain.web.gunicorn_worker import repeated_single_header


def test_client_faults_are_4xx_with_what_was_refused() -> None:
    cases = [
        (parse_errors.LimitRequestLine(5000, 4094), 414),
        (parse_errors.LimitRequestHeaders("limit request headers fields size"), 431),
        (parse_errors.InvalidHeader("CONTENT-LENGTH"), 400),
        (parse_errors.UnsupportedTransferCoding("gzip"), 400),
        (parse_errors.ExpectationFailed("200-ok"), 417),
        (parse_errors.InvalidChunkSize(b"zz"), 400),
    ]
    for exc, status in cases:
        error = refusal(exc)
        assert (error.status, error.code) == (status, "invalid_request"), exc
        assert str(exc) in error.message


def test_server_faults_are_internal_and_say_nothing() -> None:
    for exc in (parse_errors.InvalidResponseHeader("X-Secret"),
                parse_errors.ConfigurationProblem("forwarded_allow_ips is wrong"),
                RuntimeError("/srv/brain/secret path")):
        error = refusal(exc)
        assert (error.status, error.code, error.message) == (500, "internal", "internal error")


def test_brain_errors_pass_through_and_long_details_are_cut() -> None:
    mine = errors.InvalidRequest("the Idempotency-Key header is sent more than once")
    assert refusal(mine) is mine
    error = refusal(parse_errors.InvalidRequestLine("GET /" + "a" * 5000))
    assert len(error.message) < DETAIL_CHARS + 50


def test_the_raw_answer_is_the_error_shape_and_closes() -> None:
    raw = raw_error_response(refusal(parse_errors.LimitRequestLine(5000, 4094)), "req_1")
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0].startswith("HTTP/1.1 414 ")
    assert {"Connection: close", "Content-Type: application/json", "X-Request-Id: req_1",
            f"Content-Length: {len(body)}"} <= set(lines[1:])
    assert json.loads(body)["error"]["request_id"] == "req_1"


def test_a_repeated_single_header_is_named() -> None:
    assert repeated_single_header([("IDEMPOTENCY-KEY", "a1"), ("IDEMPOTENCY-KEY", "a2")]) \
        == "Idempotency-Key"
    assert repeated_single_header([("ACCEPT", "a"), ("ACCEPT", "b"),
                                   ("IDEMPOTENCY-KEY", "a1,a2")]) is None
