"""TranscriptEcho: decoding a guest's echoed transcript once must give what decoding it whole
gives, hand back the very objects Brain gave the guest, and refuse what strict decoding refuses.

The unit tests play the guest byte by byte; the last test runs the shipped default Agentloop
through the real runtime to prove the splice is the path a real guest takes.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest

from brain.agentloop import DEFAULT_AGENTLOOP, AgentloopRuntime, abi
from brain.agentloop.transcript_echo import TranscriptEcho
from brain.journal.transcript_text import MessagesText, portable
from tests.agentloop.helpers import FakeBrain, assistant, payload, text, tool_call

HEAD = {op: f'{{"op":"{op}","messages":' for op in ("transcript.set", "model.call")}
TRICKY = ["é", "日本語", "😀", '"', "\\", "\n\t", "\u2028", "]", ",", "NaN", "Infinity",
          '","messages":[', "\x00", "\ud800"]


# --- a guest that keeps the bytes it was given and appends --------------------------------


def read_reply(echo: TranscriptEcho, messages: list[Any]) -> str:
    """transcript.read's result as the guest receives it; returns the messages array's text."""
    data = echo.encode_result({"messages": messages, "through_sequence": 41})
    assert abi.decode(data) == {"messages": messages, "through_sequence": 41}
    array = abi.encode(messages).decode("utf-8")
    assert data.decode("utf-8").startswith('{"messages":' + array)
    return array


def appended(array: str, added: list[Any]) -> str:
    """The array's text with `added` appended the way an echoing guest writes it."""
    if not added:
        return array
    items = ",".join(abi.encode(item).decode("utf-8") for item in added)
    return (array[:-1] + "," if array != "[]" else "[") + items + "]"


def request(op: str, array: str, tail: str = "") -> bytes:
    return (HEAD[op] + array + tail + "}").encode("utf-8")


# --- random content -------------------------------------------------------------------------


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(TRICKY) if rng.random() < 0.4 else chr(rng.randrange(0x20, 0x3000))
                   for _ in range(rng.randrange(0, 6)))


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return random_text(rng)
    if kind == 1:
        return rng.choice([0, -1, 7, 2**70, -(2**65), 1.5, -0.0, 1e300, 2.5e-8])
    if kind == 2:
        return rng.choice([None, True, False])
    if kind == 3:
        return random_text(rng)
    if kind == 4:
        return rng.random()
    if kind in (5, 6):
        return {random_text(rng) or "k": random_value(rng, depth + 1)
                for _ in range(rng.randrange(0, 4))}
    return [random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]


def random_message(rng: random.Random) -> dict[str, Any]:
    role = rng.choice(["user", "assistant", "tool"])
    blocks: list[Any] = [text(random_text(rng)) for _ in range(rng.randrange(1, 3))]
    if rng.random() < 0.5:
        blocks.append(tool_call(f"call-{rng.randrange(99)}", "lookup", random_value(rng)))
    return {"role": role, "content": blocks}


def random_tail(rng: random.Random) -> str:
    """What a guest may put after `messages`: nothing, tools, options, another op."""
    return rng.choice([
        "",
        ',"tools":[{"name":"lookup"}]',
        ',"options":' + abi.encode(random_value(rng)).decode("utf-8"),
        ',"op":"kv.read"',
    ])


@pytest.mark.parametrize("seed", range(40))
def test_random_echoes_decode_as_whole_requests(seed: int) -> None:
    rng = random.Random(seed)
    echo = TranscriptEcho()
    transcript = [random_message(rng) for _ in range(rng.randrange(1, 12))]
    array = read_reply(echo, transcript)
    handed = list(transcript)
    for _ in range(6):
        op = rng.choice(list(HEAD))
        added = [random_message(rng) for _ in range(rng.randrange(0, 3))]
        array = appended(array, added)
        raw = request(op, array, random_tail(rng))
        decoded = echo.decode_request(raw)
        assert decoded == abi.decode(raw)
        assert json.dumps(decoded, sort_keys=True) == json.dumps(abi.decode(raw), sort_keys=True)
        for index, message in enumerate(handed):
            assert decoded["messages"][index] is message, f"item {index} was decoded again"
        handed = decoded["messages"]
        # A spliced list carries its text, which a model call sends instead of the objects.
        sent = portable(decoded["messages"])
        assert isinstance(sent, MessagesText)
        assert abi.decode(sent.text.encode("utf-8")) == decoded["messages"]


@pytest.mark.parametrize("seed", range(20))
def test_requests_that_are_not_an_echo_decode_as_whole_requests(seed: int) -> None:
    """Changed bytes inside the echo, a dropped item, another op: decoded whole, all equal."""
    rng = random.Random(1000 + seed)
    echo = TranscriptEcho()
    transcript = [random_message(rng) for _ in range(rng.randrange(2, 8))]
    array = read_reply(echo, transcript)
    variants = [
        appended(abi.encode(transcript[:-1]).decode("utf-8"), [random_message(rng)]),
        appended(abi.encode([random_message(rng)] + transcript[1:]).decode("utf-8"), []),
        array[:-1] + ' ,{"role":"user","content":[]}]',
        array[:-1] + " ]",
    ]
    for variant in variants:
        for op in HEAD:
            raw = request(op, variant, random_tail(rng))
            assert echo.decode_request(raw) == abi.decode(raw)
    other = ('{"op":"kv.put","key":"k","value":' + array + "}").encode("utf-8")
    assert echo.decode_request(other) == abi.decode(other)


def test_echoed_prefix_is_the_objects_handed_out() -> None:
    echo = TranscriptEcho()
    transcript = [{"role": "user", "content": [text("héllo")]},
                  assistant(text("ok"), tool_call("c1", "echo", {"a": [1, {"b": None}]}))]
    array = read_reply(echo, transcript)
    new = {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "c1",
                                        "content": "x", "is_error": False}]}
    decoded = echo.decode_request(request("transcript.set", appended(array, [new])))
    assert decoded["messages"][0] is transcript[0]
    assert decoded["messages"][1] is transcript[1]
    assert decoded["messages"][2] == new
    assert decoded["messages"] is not transcript, "the remembered list itself must not leak"


def test_messages_twice_decodes_as_plain_json() -> None:
    echo = TranscriptEcho()
    transcript = [{"role": "user", "content": [text("one")]}]
    array = read_reply(echo, transcript)
    own = [{"role": "user", "content": [text("theirs")]}]
    for op in HEAD:
        raw = request(op, appended(array, [own[0]]), ',"messages":' + abi.encode(own).decode())
        decoded = echo.decode_request(raw)
        assert decoded == abi.decode(raw)
        assert decoded["messages"] == own
    # The echo is still known after such a request, and the next echo splices again.
    raw = request("model.call", array)
    decoded = echo.decode_request(raw)
    assert decoded == abi.decode(raw) and decoded["messages"][0] is transcript[0]


def test_messages_twice_while_nothing_is_known_teaches_no_wrong_echo() -> None:
    """After an empty read the first whole request is learned from: its first array's text
    must be remembered with what that text decodes to, not with the `messages` that won."""
    echo = TranscriptEcho()
    read_reply(echo, [])
    first = [{"role": "user", "content": [text("first")]}]
    second = [{"role": "user", "content": [text("second")]}]
    array = abi.encode(first).decode()
    raw = request("transcript.set", array, ',"messages":' + abi.encode(second).decode())
    assert echo.decode_request(raw) == abi.decode(raw) == {"op": "transcript.set",
                                                           "messages": second}
    for op in HEAD:
        raw = request(op, appended(array, second))
        assert echo.decode_request(raw) == abi.decode(raw) == {"op": op,
                                                               "messages": first + second}


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("where", ["item", "nested", "tail", "second_messages", "not_echo"])
def test_nan_or_infinity_in_the_guests_part_is_refused(constant: str, where: str) -> None:
    echo = TranscriptEcho()
    transcript = [{"role": "user", "content": [text("NaN is text here")]}]
    array = read_reply(echo, transcript)
    bad_item = '{"role":"user","content":[{"type":"text","text":"x","n":' + constant + "}]}"
    if where == "item":
        raw = HEAD["transcript.set"] + array[:-1] + "," + constant + "]}"
    elif where == "nested":
        raw = HEAD["model.call"] + array[:-1] + "," + bad_item + "]}"
    elif where == "tail":
        raw = HEAD["model.call"] + array + ',"options":{"t":' + constant + "}}"
    elif where == "second_messages":
        raw = HEAD["transcript.set"] + array + ',"messages":[' + constant + "]}"
    else:
        raw = HEAD["transcript.set"] + "[" + bad_item + "]}"
    with pytest.raises(ValueError):
        abi.decode(raw.encode())
    with pytest.raises(ValueError):
        echo.decode_request(raw.encode())
    # A refused request changes nothing: the echo still splices.
    good = request("transcript.set", array)
    assert echo.decode_request(good)["messages"][0] is transcript[0]


@pytest.mark.parametrize("bad", [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe6\x97"])
def test_invalid_utf8_is_refused(bad: bytes) -> None:
    echo = TranscriptEcho()
    array = read_reply(echo, [{"role": "user", "content": [text("日本")]}])
    spliced = HEAD["transcript.set"].encode() + array[:-1].encode() + b',"' + bad + b'"]}'
    whole = HEAD["transcript.set"].encode() + b'["' + bad + b'"]}'
    for raw in (spliced, whole):
        with pytest.raises(ValueError):
            abi.decode(raw)
        with pytest.raises(ValueError):
            echo.decode_request(raw)


def test_a_guest_that_reserializes_with_spaces_decodes_correctly() -> None:
    echo = TranscriptEcho()
    transcript = [{"role": "user", "content": [text("é \"q\"")]}, assistant(text("日本"))]
    read_reply(echo, transcript)
    added = {"role": "user", "content": [text("more")]}
    for indent, ascii_only, separators in ((None, False, None), (2, False, None),
                                           (None, True, None), (None, True, (",", ":"))):
        body = json.dumps({"op": "transcript.set", "messages": transcript + [added]},
                          indent=indent, ensure_ascii=ascii_only, separators=separators)
        for raw in (body.encode(), body.replace('"messages":', '"messages": ').encode()):
            decoded = echo.decode_request(raw)
            assert decoded == abi.decode(raw)
            assert decoded["messages"] == transcript + [added]
    # Spaces only inside the items, after the exact head.
    spaced = json.dumps(transcript + [added], ensure_ascii=False)
    raw = request("model.call", spaced)
    assert echo.decode_request(raw) == abi.decode(raw)


def test_added_items_are_reused_on_the_next_echo() -> None:
    echo = TranscriptEcho()
    transcript = [{"role": "user", "content": [text("q1")]}, assistant(text("a1"))]
    array = read_reply(echo, transcript)
    user = {"role": "user", "content": [text("q2 ü")]}
    array = appended(array, [user])
    first = echo.decode_request(request("transcript.set", array))
    assert first["messages"] == transcript + [user]
    reply = assistant(text("a2"), tool_call("c9", "lookup", {"deep": [[{"x": "\\"}]]}))
    array = appended(array, [reply])
    second = echo.decode_request(request("model.call", array, ',"tools":[]'))
    assert second == abi.decode(request("model.call", array, ',"tools":[]'))
    assert second["messages"][0] is transcript[0] and second["messages"][1] is transcript[1]
    assert second["messages"][2] is first["messages"][2], "the set's added item was decoded again"
    third = echo.decode_request(request("transcript.set", array))
    assert all(a is b for a, b in zip(third["messages"], second["messages"], strict=True))


def test_empty_transcript_read_then_set() -> None:
    echo = TranscriptEcho()
    assert read_reply(echo, []) == "[]"
    user = {"role": "user", "content": [text("first é")]}
    array = appended("[]", [user])
    first = echo.decode_request(request("transcript.set", array))
    assert first == {"op": "transcript.set", "messages": [user]}
    second = echo.decode_request(request("model.call", array))
    assert second == {"op": "model.call", "messages": [user]}
    assert second["messages"][0] is first["messages"][0], "learned from the whole decode"
    reply = assistant(text("hi"))
    array = appended(array, [reply])
    third = echo.decode_request(request("transcript.set", array))
    assert third["messages"] == [user, reply]
    assert third["messages"][0] is first["messages"][0]


# --- the real default Agentloop -------------------------------------------------------------


class IdentityBrain:
    """A FakeBrain whose transcript.read hands out one list of objects, and which keeps the
    requests as the runtime decoded them (FakeBrain copies them)."""

    def __init__(self, brain: FakeBrain) -> None:
        self.brain = brain
        self.requests: list[dict[str, Any]] = []
        self.handed: list[Any] | None = None

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        if request["op"] == "transcript.read":
            self.handed = list(self.brain.messages)
            self.brain.requests.append(request)
            return {"messages": self.handed, "through_sequence": self.brain.sequence}
        return self.brain(request)


def test_default_agentloop_takes_the_splice_path() -> None:
    long = []
    for n in range(150):
        long.append({"role": "user", "content": [text(f"question {n} é \"q\" 日本")]})
        long.append(assistant(text(f"answer {n}"), tool_call(f"c{n}", "lookup", {"n": [n]})))
    replies = [assistant(text("looking"), tool_call("t1", "lookup", {"w": "x"})),
               assistant(text("again"), tool_call("t2", "lookup", {"w": "y"})),
               assistant(text("Done."))]
    host = IdentityBrain(FakeBrain(replies=replies, transcript=long))
    result = AgentloopRuntime().activate(
        DEFAULT_AGENTLOOP, payload("go"), host, time.monotonic() + 30)
    assert result == {"status": "completed", "output": "Done."}
    assert host.handed is not None and len(host.handed) == len(long)
    echoing = [r for r in host.requests if r["op"] in ("transcript.set", "model.call")]
    assert [r["op"] for r in echoing].count("model.call") == 3
    previous: list[Any] = host.handed
    for number, req in enumerate(echoing):
        messages = req["messages"]
        for index, message in enumerate(host.handed):
            assert messages[index] is message, f"request {number} item {index} decoded again"
        for index, message in enumerate(previous):
            assert messages[index] is message, f"request {number} re-decoded an added item"
        previous = messages
    assert len(previous) == len(long) + 6
