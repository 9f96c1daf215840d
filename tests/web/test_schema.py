"""Requests held to the declared shapes: what is refused, and the words a client reads."""

from __future__ import annotations

from typing import Any

import pytest

from brain import errors
from brain.config import MAX_IDLE_TTL_MS
from brain.web.resources.host import HOST_POLL_BODY
from brain.web.resources.messages import MESSAGE_BODY
from brain.web.resources.sessions import CREATE_BODY
from brain.web.schema import Schema, check, describe


def refusal(spec: Any, value: Any) -> str:
    with pytest.raises(errors.InvalidRequest) as caught:
        check(spec, value)
    assert (caught.value.status, caught.value.code) == (400, "invalid_request")
    return caught.value.message


@pytest.mark.parametrize("body, message", [
    ({}, "input: required"),
    ({"input": "hi", "extra": 1}, "unknown field: extra"),
    ({"input": 7}, "input: expected a string or a list of content blocks"),
    ({"input": ["text"]}, "input: expected a string or a list of content blocks"),
    ({"input": [{"text": "no type"}]}, "input: expected a string or a list of content blocks"),
    ({"input": None}, "input: expected a string or a list of content blocks"),
])  # fmt: skip
def test_message_bodies(body: dict, message: str) -> None:
    assert refusal(MESSAGE_BODY, body) == message


def test_message_bodies_that_fit() -> None:
    check(MESSAGE_BODY, {"input": "hi"})
    check(MESSAGE_BODY, {"input": [{"type": "text", "text": "hi"}, {"type": "image"}]})


@pytest.mark.parametrize("body, message", [
    ({"surprise": None}, "unknown field: surprise"),
    ({"model": 3}, "model: expected a string"),
    ({"tools": "echo"}, "tools: expected a list of strings"),
    ({"tools": ["echo", "echo"]}, "tools: items must not repeat"),
    ({"idle_ttl_ms": True}, "idle_ttl_ms: expected an integer"),
    ({"idle_ttl_ms": 1.5}, "idle_ttl_ms: expected an integer"),
    ({"idle_ttl_ms": -1}, f"idle_ttl_ms: must be between 0 and {MAX_IDLE_TTL_MS}"),
    ({"idle_ttl_ms": 2**63}, f"idle_ttl_ms: must be between 0 and {MAX_IDLE_TTL_MS}"),
    ({"metadata": []}, "metadata: expected an object"),
    ({"transcript": [{"role": "user", "content": "ok"}, "hello"]},
     "transcript[1]: expected a message"),
    ({"transcript": [{"role": "narrator", "content": "hi"}]},
     "transcript[0].role: must be one of user, assistant, tool, system"),
    ({"transcript": [{"role": "user"}]}, "transcript[0].content: required"),
    ({"transcript": [{"role": "user", "content": [{"text": "x"}]}]},
     "transcript[0].content: expected a string or a list of content blocks"),
])  # fmt: skip
def test_create_bodies(body: dict, message: str) -> None:
    assert refusal(CREATE_BODY, body) == message


def test_null_is_absent_in_a_create_body() -> None:
    check(CREATE_BODY, dict.fromkeys(CREATE_BODY.spec["properties"]))
    check(CREATE_BODY, {"idle_ttl_ms": MAX_IDLE_TTL_MS, "tools": ["a", "b"], "metadata": {}})


@pytest.mark.parametrize("body, message", [
    ({"tools": ["t"], "wait_secs": 31}, "wait_secs: must be between 0 and 30"),
    ({"tools": ["t"], "wait_secs": "5"}, "wait_secs: expected a number"),
    ({"tools": ["t"], "max_calls": -1}, "max_calls: must be between 0 and 100"),
    ({"tools": ["t"], "max_calls": 2.0}, "max_calls: expected an integer"),
    ({"tools": ["t"], "host_id": "a b"}, "host_id: must match ^[A-Za-z0-9_.:-]{1,64}$"),
    ({"tools": [1]}, "tools[0]: expected a string"),
    ({}, "name at least one host tool or environment to serve"),
    ({"tools": [], "environments": [], "wait_secs": 1},
     "name at least one host tool or environment to serve"),
])  # fmt: skip
def test_host_poll_bodies(body: dict, message: str) -> None:
    assert refusal(HOST_POLL_BODY, body) == message


def test_host_poll_bodies_that_name_something_fit() -> None:
    check(HOST_POLL_BODY, {"tools": ["t"]})
    check(HOST_POLL_BODY, {"tools": [], "environments": ["e"]})


def test_enums_compare_as_json() -> None:
    """Python's True == 1 must not let a boolean through an enum of numbers, or the reverse."""
    assert refusal({"enum": [1]}, True) == "must be one of 1"
    assert refusal({"enum": [True]}, 1) == "must be one of True"


def test_describe_speaks_of_shapes_by_their_nouns() -> None:
    block = Schema("Block", {"type": "object"}, "block")
    assert describe({"type": "array", "items": block}) == "a list of blocks"
    assert describe({"type": "integer"}) == "an integer"
    assert describe({"oneOf": [{"type": "string"}, {"type": "boolean"}]}) == \
        "a string or a boolean"
