"""The model executor's messages cache: whatever it remembers, a decoded request must equal
decoding the whole text, and the memory must stay within its bounds."""

from __future__ import annotations

import json

import pytest

from brain.actors.executors.messages_cache import MessagesCache
from brain.journal.transcript_text import MessagesText, json_text


def msg(i: int) -> dict:
    return {"role": ("user", "assistant")[i % 2], "content": [{"type": "text", "text": f"m{i},]"}]}


def text_of(n: int) -> str:
    return json_text([msg(i) for i in range(n)])


def test_a_call_that_repeats_the_last_one_decodes_to_the_whole_text() -> None:
    cache = MessagesCache()
    first = cache.decode("s1", text_of(3))
    second = cache.decode("s1", text_of(5))
    assert second == json.loads(text_of(5))
    assert second[0] is first[0]  # the remembered objects, not a second decode
    assert cache.decode("s1", text_of(5)) == json.loads(text_of(5))  # nothing added


@pytest.mark.parametrize("other", [
    text_of(2),  # shorter
    json_text([msg(9)] + [msg(i) for i in range(1, 6)]),  # the first message edited
    text_of(3)[:-1] + " ,{\"role\":\"user\",\"content\":\"x\"}]",  # whitespace after the echo
    "[]",
])
def test_anything_else_is_decoded_whole(other: str) -> None:
    cache = MessagesCache()
    remembered = cache.decode("s1", text_of(3))
    got = cache.decode("s1", other)
    assert got == json.loads(other)
    assert not any(a is b for a, b in zip(got, remembered, strict=False))  # decoded afresh


def test_sessions_do_not_share_an_entry() -> None:
    cache = MessagesCache()
    mine = cache.decode("s1", text_of(3))
    theirs = cache.decode("s2", text_of(4))
    assert theirs == json.loads(text_of(4)) and theirs[0] is not mine[0]


def test_requests_without_text_pass_through_and_text_is_decoded() -> None:
    cache = MessagesCache()
    plain = {"messages": [msg(0)], "tools": []}
    assert cache.request("s1", plain) is plain
    sent = {"messages": MessagesText(text_of(2)), "tools": [], "options": {}}
    assert cache.request("s1", sent) == {**sent, "messages": json.loads(text_of(2))}
    with pytest.raises(ValueError):
        cache.request("s2", {"messages": MessagesText('{"not": "an array"}')})


def test_the_memory_is_bounded_by_sessions_and_characters() -> None:
    cache = MessagesCache(max_sessions=3, max_chars=len(text_of(10)) * 2)
    for n in range(5):
        cache.decode(f"s{n}", text_of(2))
    assert list(cache._entries) == ["s2", "s3", "s4"]
    cache.decode("big1", text_of(10))
    cache.decode("big2", text_of(10))
    assert cache._chars <= cache.max_chars and "big2" in cache._entries
    cache.decode("huge", text_of(30))  # larger than the whole budget: decoded, not kept
    assert "huge" not in cache._entries
    assert sum(len(known) for known, _ in cache._entries.values()) == cache._chars
