"""The SSE parser: whole events from arbitrarily split bytes."""

from __future__ import annotations

from brain.net.sse import SseEvent, SseParser

STREAM = (
    b": keep-alive comment\n"
    b"event: content_block_delta\r\n"
    b'data: {"a": "caf\xc3\xa9"}\r\n'
    b"\r\n"
    b"id: 7\n"
    b"retry: 100\n"
    b"data: line one\n"
    b"data:line two\n"
    b"\n"
    b"event: only-a-name\n"
    b"\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SseEvent("content_block_delta", '{"a": "café"}'),
    SseEvent("message", "line one\nline two", "7"),
    SseEvent("message", "[DONE]"),
]


def test_whole_stream_at_once():
    assert SseParser().feed(STREAM) == EXPECTED


def test_every_split_point_gives_the_same_events():
    for cut in range(len(STREAM) + 1):
        parser = SseParser()
        events = parser.feed(STREAM[:cut]) + parser.feed(STREAM[cut:])
        assert events == EXPECTED, cut


def test_byte_by_byte():
    parser = SseParser()
    events = []
    for i in range(len(STREAM)):
        events += parser.feed(STREAM[i : i + 1])
    assert events == EXPECTED


def test_an_unterminated_event_is_not_dispatched():
    assert SseParser().feed(b"data: partial\n") == []


BARE_CR = b"event: a\rdata: 1\r\rid: 5\r\ndata: 2\r\n\r\ndata: 3\n\n"
BARE_CR_EVENTS = [SseEvent("a", "1"), SseEvent("message", "2", "5"), SseEvent("message", "3")]


def test_bare_cr_line_ends_at_every_split_point():
    """A CR ends a line, and a CRLF split between two reads is still one line end."""
    for cut in range(len(BARE_CR) + 1):
        parser = SseParser()
        assert parser.feed(BARE_CR[:cut]) + parser.feed(BARE_CR[cut:]) == BARE_CR_EVENTS, cut


def test_an_id_belongs_to_the_event_that_carried_it():
    parser = SseParser()
    assert parser.feed(b"id: 1\ndata: a\n\ndata: b\n\n") == [SseEvent("message", "a", "1"),
                                                            SseEvent("message", "b", None)]


def test_empty_data_line_dispatches_and_unknown_fields_are_ignored():
    assert SseParser().feed(b"data\nretry: 3\nfoo: bar\n\n") == [SseEvent("message", "")]
