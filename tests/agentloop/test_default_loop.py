"""The shipped default Agentloop, driven through the real runtime by a fake in-process Brain."""

from __future__ import annotations

import time

import pytest

from brain.agentloop import DEFAULT_AGENTLOOP, AgentloopRuntime
from tests.agentloop.helpers import FakeBrain, assistant, payload, text, tool_call

USER_HI = {"role": "user", "content": [text("hi")]}


@pytest.fixture(scope="module")
def runtime() -> AgentloopRuntime:
    return AgentloopRuntime()


def run(runtime: AgentloopRuntime, brain: FakeBrain, input="hi", **kw) -> dict:
    return runtime.activate(DEFAULT_AGENTLOOP, payload(input), brain, time.monotonic() + 30, **kw)


def test_text_answer(runtime: AgentloopRuntime) -> None:
    brain = FakeBrain(replies=[assistant(text("Hello"), text(", world"))])
    result = run(runtime, brain)
    assert result == {"status": "completed", "output": "Hello, world"}
    assert brain.requests == [
        {"op": "transcript.read"},
        {"op": "transcript.set", "messages": [USER_HI]},
        {"op": "model.call", "messages": [USER_HI]},  # no `tools`: the session's own
        {"op": "transcript.set", "messages": [USER_HI, assistant(text("Hello"), text(", world"))]},
    ]
    assert brain.messages == [USER_HI, assistant(text("Hello"), text(", world"))]


def test_two_tool_calls_then_text(runtime: AgentloopRuntime) -> None:
    asks = assistant(
        text("Let me look."),
        tool_call("call-1", "lookup", {"word": "brain"}),
        tool_call("call-2", "echo", {"say": [1, 2.5, None, True]}),
    )
    answer = assistant(text("Done."))

    def tool(name: str, input: dict) -> dict:
        if name == "lookup":
            return {"content": "an organ", "is_error": False}
        return {"content": input, "is_error": True}

    brain = FakeBrain(replies=[asks, answer], tool=tool)
    result = run(runtime, brain)
    assert result == {"status": "completed", "output": "Done."}

    tool_message = {
        "role": "tool",
        "content": [
            {
                "type": "tool_result",
                "tool_call_id": "call-1",
                "content": "an organ",
                "is_error": False,
            },
            {
                "type": "tool_result",
                "tool_call_id": "call-2",
                "content": {"say": [1, 2.5, None, True]},
                "is_error": True,
            },
        ],
    }
    after_asks = [USER_HI, asks]
    after_tools = [USER_HI, asks, tool_message]
    final = [USER_HI, asks, tool_message, answer]
    assert brain.requests == [
        {"op": "transcript.read"},
        {"op": "transcript.set", "messages": [USER_HI]},
        {"op": "model.call", "messages": [USER_HI]},
        {"op": "transcript.set", "messages": after_asks},
        {
            "op": "tools.call",
            "calls": [
                {"id": "call-1", "name": "lookup", "input": {"word": "brain"}},
                {"id": "call-2", "name": "echo", "input": {"say": [1, 2.5, None, True]}},
            ],
        },
        {"op": "transcript.set", "messages": after_tools},
        {"op": "model.call", "messages": after_tools},
        {"op": "transcript.set", "messages": final},
    ]
    assert brain.messages == final


def test_existing_transcript_is_kept_and_extended(runtime: AgentloopRuntime) -> None:
    earlier = [USER_HI, assistant(text("Hi!"))]
    brain = FakeBrain(replies=[assistant(text("Again?"))], transcript=earlier)
    assert run(runtime, brain, "hi")["output"] == "Again?"
    assert brain.requests[2] == {"op": "model.call", "messages": [*earlier, USER_HI]}
    assert brain.messages == [*earlier, USER_HI, assistant(text("Again?"))]


def test_list_input_is_used_as_content_blocks(runtime: AgentloopRuntime) -> None:
    blocks = [text("look at"), {"type": "image", "url": "https://example.test/a.png"}]
    brain = FakeBrain(replies=[assistant(text("ok"))])
    run(runtime, brain, blocks)
    assert brain.messages[0] == {"role": "user", "content": blocks}


def test_final_message_without_text_gives_empty_output(runtime: AgentloopRuntime) -> None:
    brain = FakeBrain(replies=[assistant()])
    assert run(runtime, brain) == {"status": "completed", "output": ""}


TRICKY = [
    'quotes "inside" and \\backslashes\\ and \\"both\\"',
    "control \x00\x01\x08\t\n\x0b\x0c\r\x1b\x1f\x7f end",
    "non-ASCII: é ß 漢字 🎉 \u2028 \u2029 \ufeff",
    'looks like JSON: {"a": [1, 2]}, \\u0041 is not an escape here',
    "/ solidus \\/ and </script>",
    "",
]


@pytest.mark.parametrize("tricky", TRICKY)
def test_json_escaping_round_trip(runtime: AgentloopRuntime, tricky: str) -> None:
    brain = FakeBrain(
        replies=[
            assistant(text(tricky), tool_call(tricky, tricky, {tricky: tricky})),
            assistant(text(tricky), text(tricky)),
        ],
        tool=lambda name, input: {"content": [name, input], "is_error": False},
    )
    result = run(runtime, brain, tricky)
    assert result == {"status": "completed", "output": tricky + tricky}
    assert brain.messages[0] == {"role": "user", "content": [text(tricky)]}
    assert brain.requests[4] == {
        "op": "tools.call",
        "calls": [{"id": tricky, "name": tricky, "input": {tricky: tricky}}],
    }
    assert brain.messages[2]["content"][0] == {
        "type": "tool_result",
        "tool_call_id": tricky,
        "content": [tricky, {tricky: tricky}],
        "is_error": False,
    }


def test_lone_surrogate_from_host_does_not_break_the_loop(runtime: AgentloopRuntime) -> None:
    brain = FakeBrain(replies=[assistant(text("half \ud83c pair"))])
    result = run(runtime, brain)
    assert result == {"status": "completed", "output": "half \ud83c pair"}


@pytest.mark.parametrize("op", ["transcript.read", "transcript.set", "model.call", "tools.call"])
def test_host_error_fails_the_turn_with_its_code(runtime: AgentloopRuntime, op: str) -> None:
    brain = FakeBrain(replies=[assistant(tool_call("c", "echo", {})), assistant(text("x"))])
    brain.errors[op] = {"error": {"code": "model_call_limit", "message": f'{op} "refused"'}}
    result = run(runtime, brain)
    assert result == {
        "status": "failed",
        "error": {"code": "model_call_limit", "message": f'{op} "refused"'},
    }
    assert brain.ops()[-1] == op


def test_too_few_tool_results_fail_the_turn(runtime: AgentloopRuntime) -> None:
    brain = FakeBrain(replies=[assistant(tool_call("a", "echo", 1), tool_call("b", "echo", 2))])
    brain.errors["tools.call"] = {"results": [{"content": 1, "is_error": False}]}
    result = run(runtime, brain)
    assert result["status"] == "failed"
    assert result["error"]["code"] == "agentloop_error"


def test_missing_input_fails_the_turn(runtime: AgentloopRuntime) -> None:
    brain = FakeBrain()
    result = runtime.activate(DEFAULT_AGENTLOOP, {"kind": "turn"}, brain, None)
    assert result["status"] == "failed"
    assert result["error"]["code"] == "invalid_request"
    assert brain.requests == []


def test_many_rounds_keep_memory_bounded() -> None:
    """60 rounds with 30 KB tool results: the transcript reaches ~2 MB, and a loop that kept
    every request and result it made would need over 100 MB; 32 MB must be enough."""
    runtime = AgentloopRuntime(memory_limit_bytes=32 << 20)
    rounds = 60
    replies = [assistant(tool_call(f"c{i}", "echo", {"i": i})) for i in range(rounds)]
    brain = FakeBrain(
        replies=[*replies, assistant(text("finally"))],
        tool=lambda name, input: {"content": "x" * 30_000, "is_error": False},
    )
    result = runtime.activate(DEFAULT_AGENTLOOP, payload("go"), brain, time.monotonic() + 60)
    assert result == {"status": "completed", "output": "finally"}
    assert len(brain.messages) == 1 + 2 * rounds + 1
    assert brain.ops().count("model.call") == rounds + 1
