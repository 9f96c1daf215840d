"""The scripted provider: deterministic answers, scripts, streaming, failure and cancel."""

from __future__ import annotations

import json
import threading
import time

import pytest

from brain.effects import EffectFailed, Outcome
from brain.models import ModelCallError, ProviderSpecError, make_provider

from .helpers import cancel_after


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(*blocks):
    return {"role": "assistant", "content": list(blocks)}


def tool(call_id, content, is_error=False):
    return {
        "role": "tool",
        "content": [
            {
                "type": "tool_result",
                "tool_call_id": call_id,
                "content": content,
                "is_error": is_error,
            }
        ],
    }


def call(provider, messages, cancel=None):
    deltas: list[str] = []
    out = provider.call(
        {"messages": messages, "tools": [], "options": {}},
        deltas.append,
        cancel or threading.Event(),
    )
    return out, deltas


def test_default_echoes_the_last_user_text_and_streams_it_once():
    p = make_provider("scripted", {"provider": "scripted"})
    out, deltas = call(p, [user("hello there")])
    assert out == {
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "echo: hello there"}],
        },
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 2, "output_tokens": 3},
    }
    assert deltas == ["echo: hello there"]


def test_default_summarises_tool_results():
    p = make_provider("scripted", {"provider": "scripted"})
    messages = [
        user("go"),
        assistant({"type": "tool_call", "id": "c1", "name": "echo", "input": {"a": 1}}),
        tool("c1", {"a": 1}),
    ]
    out, _ = call(p, messages)
    assert out["message"]["content"] == [{"type": "text", "text": 'tool results: {"a":1}'}]


def test_same_request_same_answer_across_instances():
    spec = {"script": [{"tool_calls": [{"name": "echo", "input": {"x": 1}}]}, {"text": "done"}]}
    messages = [user("hi")]
    a, _ = call(make_provider("m", spec), messages)
    b, _ = call(make_provider("m", spec), messages)
    assert a == b
    assert a["stop_reason"] == "tool_use"
    assert a["message"]["content"] == [
        {"type": "tool_call", "id": "call_1_0", "name": "echo", "input": {"x": 1}}
    ]


def test_step_is_chosen_by_assistant_messages_since_last_user_and_clamped():
    spec = {
        "script": [
            {"tool_calls": [{"name": "echo", "input": {}}, {"name": "echo", "input": {"n": 2}}]},
            {"text": "second"},
            {"text": "last"},
        ]
    }
    p = make_provider("m", spec)
    first, _ = call(p, [user("a")])
    ids = [b["id"] for b in first["message"]["content"]]
    assert ids == ["call_1_0", "call_1_1"]
    history = [user("a"), first["message"], tool("call_1_0", "x"), tool("call_1_1", "y")]
    second, _ = call(p, history)
    assert second["message"]["content"] == [{"type": "text", "text": "second"}]
    history += [second["message"], assistant({"type": "text", "text": "more"})]
    third, _ = call(p, history)
    assert third["message"]["content"][0]["text"] == "last"
    # a new user message restarts the sequence
    again, _ = call(p, history + [assistant({"type": "text", "text": "x"}), user("b")])
    assert again["stop_reason"] == "tool_use"


def test_when_last_user_matches_selects_its_own_sequence():
    spec = {
        "script": [
            {"when_last_user_matches": "weather", "text": "sunny"},
            {"when_last_user_matches": "^fail", "fail": {"outcome": "error", "message": "nope"}},
            {"text": "plain"},
        ]
    }
    p = make_provider("m", spec)
    assert call(p, [user("the weather?")])[0]["message"]["content"][0]["text"] == "sunny"
    assert call(p, [user("hello")])[0]["message"]["content"][0]["text"] == "plain"
    with pytest.raises(ModelCallError) as info:
        call(p, [user("fail now")])
    assert (info.value.outcome, info.value.message, info.value.status) == ("error", "nope", None)


def test_only_patterned_steps_and_no_match_falls_back_to_echo():
    p = make_provider("m", {"script": [{"when_last_user_matches": "x", "text": "X"}]})
    assert call(p, [user("abc")])[0]["message"]["content"][0]["text"] == "echo: abc"


def test_stream_chunks_are_delivered_in_order_with_delay():
    spec = {"script": [{"text": "abcdefgh", "stream_chunks": 4, "chunk_delay_ms": 30}]}
    p = make_provider("m", spec)
    started = time.monotonic()
    out, deltas = call(p, [user("x")])
    assert deltas == ["ab", "cd", "ef", "gh"]
    assert time.monotonic() - started >= 0.08
    assert out["message"]["content"] == [{"type": "text", "text": "abcdefgh"}]


def test_explicit_chunk_list_then_failure_streams_then_raises():
    spec = {
        "script": [
            {
                "stream_chunks": ["par", "tial"],
                "fail": {"outcome": "unknown", "message": "stream cut", "status": None},
            }
        ]
    }
    deltas: list[str] = []
    with pytest.raises(ModelCallError) as info:
        make_provider("m", spec).call({"messages": [user("x")]}, deltas.append, threading.Event())
    assert deltas == ["par", "tial"]
    assert info.value.outcome == "unknown"


@pytest.mark.parametrize(
    "step",
    [
        {"delay_ms": 10_000},
        {"text": "a" * 100, "stream_chunks": 100, "chunk_delay_ms": 200},
    ],
)
def test_cancel_stops_a_slow_step_quickly(step):
    p = make_provider("m", {"script": [step]})
    cancel = cancel_after(0.2)
    with pytest.raises(ModelCallError) as info:
        call(p, [user("x")], cancel)
    assert info.value.outcome == "cancelled"
    assert cancel.stopped_within(0.5)


def test_already_cancelled_call_raises_at_once():
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ModelCallError) as info:
        call(make_provider("scripted", {"provider": "scripted"}), [user("x")], cancel)
    assert info.value.outcome == "cancelled"


def test_script_file_is_read(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [{"text": "from file"}]}))
    p = make_provider("m", {"provider": "scripted", "script_file": str(path)})
    assert call(p, [user("x")])[0]["message"]["content"][0]["text"] == "from file"


def test_script_from_toml_inline_tables():
    import tomllib

    spec = tomllib.loads(
        """
        [models.s]
        provider = "scripted"
        script = [
          { tool_calls = [ { name = "echo", input = { word = "hi" } } ] },
          { text = "done", stream_chunks = 2 },
        ]
        """
    )["models"]["s"]
    p = make_provider("s", spec)
    out, _ = call(p, [user("x")])
    assert out["message"]["content"][0]["input"] == {"word": "hi"}


@pytest.mark.parametrize(
    "spec",
    [
        {"script": "nope"},
        {"script": [{"txt": "typo"}]},
        {"script": [{"when_last_user_matches": "("}]},
        {"script": [{"fail": {"outcome": "maybe"}}]},
        {"script": [{"stream_chunks": 0, "text": "x"}]},
        {"script": [{"delay_ms": -1}]},
        {"script": [{"tool_calls": [{"input": {}}]}]},
        {"script": [], "script_file": "x.json"},
        {"script_file": "/nonexistent/script.json"},
        {"provider": "mystery"},
    ],
)
def test_bad_specs_are_refused_at_construction(spec):
    with pytest.raises(ProviderSpecError):
        make_provider("m", spec)


def test_model_call_error_rejects_unknown_outcomes_and_serialises():
    with pytest.raises(ValueError):
        ModelCallError("maybe", "x")
    err = ModelCallError("error", "HTTP 429: slow down", status=429)
    assert (err.outcome, err.message, err.status) == ("error", "HTTP 429: slow down", 429)
    assert isinstance(err, EffectFailed) and err.outcome is Outcome.ERROR
    assert str(err) == "HTTP 429: slow down"


def test_the_example_in_docs_models_md_behaves_as_described():
    import pathlib
    import re
    import tomllib

    doc = (pathlib.Path(__file__).parents[2] / "docs" / "models.md").read_text()
    block = re.search(r"```toml\n(.*?)```", doc, re.S).group(1)
    p = make_provider("tooly", tomllib.loads(block)["models"]["tooly"])
    question = [user("what's the weather?")]
    first, _ = call(p, question)
    assert first["message"]["content"] == [
        {"type": "tool_call", "id": "call_1_0", "name": "lookup", "input": {"word": "sun"}}
    ]
    second, deltas = call(p, question + [first["message"], tool("call_1_0", "hot")])
    assert "".join(deltas) == "It is sunny today." and len(deltas) == 4
    with pytest.raises(ModelCallError) as info:
        call(p, [user("boom")])
    assert (info.value.outcome, info.value.status) == ("error", 500)
    with pytest.raises(ModelCallError) as info:
        call(p, [user("hello")])
    assert info.value.outcome == "unknown"
