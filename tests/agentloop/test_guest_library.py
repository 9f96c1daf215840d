"""brain_guest in plain Python against the host's real TranscriptEcho: the requests a Python
loop sends start with the text Brain holds whenever they can, and always mean what the loop
meant (issue 29). Fast: no component is built here."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from brain.agentloop.build import GUEST_LIBRARY
from brain.agentloop.transcript_echo import TranscriptEcho


def msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


class Brain:
    """Decodes each request as the host does and answers it as a session would."""

    def __init__(self, saved: list[dict[str, Any]]) -> None:
        self.echo = TranscriptEcho()
        self.saved = saved
        self.requests: list[tuple[str, bool, list[Any]]] = []  # (op, spliced, messages)

    def __call__(self, text: str) -> str:
        request = self.echo.decode_request(text.encode())
        messages = request.get("messages")
        if messages is not None:
            spliced = type(messages).__name__ == "TranscriptList"
            self.requests.append((request["op"], spliced, list(messages)))
        if request["op"] == "transcript.read":
            return self.echo.encode_result({"messages": self.saved,
                                            "through_sequence": 9}).decode()
        if request["op"] == "transcript.set":
            self.saved = list(messages)
            return '{"sequence":10}'
        return json.dumps({"message": msg("assistant", "reply"), "stop_reason": "end_turn"})


@pytest.fixture
def guest() -> Iterator[Any]:
    sys.path.insert(0, str(GUEST_LIBRARY))
    import brain_guest
    from brain_guest import _echo, _host

    _echo.echo.__init__()  # a fresh "instance"
    yield brain_guest
    _host._answer = None
    _echo.echo.__init__()
    sys.path.remove(str(GUEST_LIBRARY))


def serve(brain: Brain) -> None:
    from brain_guest import _host

    _host._answer = brain


@pytest.mark.parametrize("saved", [[], [msg("user", "earlier"), msg("assistant", "ü")]])
def test_a_growing_transcript_is_sent_as_brains_text_plus_the_new(guest: Any,
                                                                   saved: list) -> None:
    brain = Brain(saved)
    serve(brain)
    conversation = guest.transcript.read()
    conversation.append(msg("user", "hi"))
    guest.transcript.set(conversation)
    reply = guest.model.call(conversation, tools=[])
    conversation.append(reply.message)
    guest.transcript.set(conversation)
    expected = saved + [msg("user", "hi"), msg("assistant", "reply")]
    assert brain.saved == expected
    spliced = [s for _, s, _ in brain.requests]
    # With nothing saved, Brain learns the first whole list and echoes from then on.
    assert spliced == ([False, True, True] if not saved else [True, True, True])
    assert conversation.messages == expected


def test_an_earlier_message_edited_in_a_list_is_sent_whole(guest: Any) -> None:
    brain = Brain([msg("user", "old")])
    serve(brain)
    messages = guest.transcript.read().messages
    messages[0]["content"][0]["text"] = "edited"
    guest.transcript.set(messages)
    assert brain.saved == [msg("user", "edited")]
    assert brain.requests[-1][1] is False


def test_a_conversation_after_another_list_was_sent_is_sent_whole(guest: Any) -> None:
    brain = Brain([msg("user", "a")])
    serve(brain)
    conversation = guest.transcript.read()
    guest.transcript.set([msg("user", "something else")])
    conversation.append(msg("user", "b"))
    guest.transcript.set(conversation)
    assert brain.saved == [msg("user", "a"), msg("user", "b")]


def test_a_guest_call_error_is_raised_with_its_code(guest: Any) -> None:
    from brain_guest import _host

    _host._answer = lambda text: '{"error":{"code":"model_call_limit","message":"enough"}}'
    with pytest.raises(guest.GuestCallError) as caught:
        guest.model.call([msg("user", "x")])
    assert (caught.value.op, caught.value.code) == ("model.call", "model_call_limit")
    with pytest.raises(guest.GuestCallError):
        guest.transcript.read()


def test_tool_definitions_come_from_tools_list(guest: Any) -> None:
    from brain_guest import _host

    asked = []
    tools = [{"name": "docs.search", "description": "Search.", "input_schema": {"type": "object"},
              "annotations": {"readOnlyHint": True}}]

    def answer(text: str) -> str:
        asked.append(json.loads(text))
        return json.dumps({"tools": tools})

    _host._answer = answer
    assert guest.tools.definitions() == tools
    assert asked == [{"op": "tools.list"}]


def test_testing_runs_a_loop_in_plain_python(guest: Any) -> None:
    from brain_guest.testing import run, serve_with

    def activate(turn: Any) -> str:
        return guest.kv.read("name", "nobody") + ":" + turn.text()

    serve_with(lambda request: {"found": True, "value": "ada"})
    assert run(activate, {"input": "hi"}) == {"status": "completed", "output": "ada:hi"}
    serve_with(None)


def test_the_build_time_warm_up_runs_every_path_and_leaves_no_trace(guest: Any) -> None:
    """`brain agentloop build` runs `_warm.warm_up()` before its snapshot: each of the library's
    paths must complete against the stand-in answers (an exception would only be swallowed
    into a failed result, warming nothing), and Brain's stand-in and the echo's text must be
    gone afterwards, or every instance would start with them."""
    import json as json_module

    from brain_guest import _echo, _host, _warm, entry

    _host.answer_with(_warm._answer)
    result = json_module.loads(entry.activate(_warm._exercise, _warm._PAYLOAD,
                                              seal_runtime=False))
    assert result == {"status": "completed", "output": "warm"}
    _warm.warm_up()
    assert _host._answer is None
    assert _echo.echo.text == "" and _echo.echo._pristine == []
    assert sys.stdout is sys.__stdout__ or not isinstance(sys.stdout, entry._PrintSink)
