"""Tool calls that come without an id are journaled with one Brain assigns, never `""`.

A real server runs the default loop against fake OpenAI and Anthropic servers (real sockets)
whose tool calls carry no id, and the host-script loop sends `tools.call` items without one;
the ids are read back from the journal the server wrote.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brain.journal import JournalScan
from tests.models.fakes import FakeServer, json_answer
from tests.support.guests import example_guest
from tests.support.server import BrainServer, configured


def openai_tool_calls(*texts: str) -> dict[str, Any]:
    calls = [{"type": "function", "function": {"name": "echo",
                                               "arguments": json.dumps({"text": t})}}
             for t in texts]
    return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": calls},
                         "finish_reason": "tool_calls"}]}


OPENAI_DONE = {"choices": [{"message": {"role": "assistant", "content": "done"},
                            "finish_reason": "stop"}]}


def anthropic_message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": content, "stop_reason": stop_reason,
            "usage": {"input_tokens": 3, "output_tokens": 2}}


@pytest.fixture
def fakes() -> Iterator[tuple[FakeServer, FakeServer]]:
    with FakeServer() as openai, FakeServer() as anthropic:
        yield openai, anthropic


@pytest.fixture
def server(tmp_path: Path, fakes: tuple[FakeServer, FakeServer]) -> Iterator[BrainServer]:
    openai, anthropic = fakes
    script = tmp_path / "host_script.wasm"
    shutil.copy(example_guest("host_script"), script)
    s = configured(tmp_path,
                   f'[models.openai]\nprovider = "openai"\nbase_url = "{openai.url}/v1"\n'
                   f'model = "m"\nstream = false\napi_key_env = "FAKE_KEY"\n'
                   f'[models.claude]\nprovider = "anthropic"\nbase_url = "{anthropic.url}"\n'
                   f'model = "claude-test"\nstream = false\napi_key_env = "FAKE_KEY"\n'
                   f'[agentloops.script]\npath = "{script}"\n',
                   {"FAKE_KEY": "k"})
    try:
        yield s.start()
    finally:
        s.kill()


def records(server: BrainServer, sid: str) -> list[dict[str, Any]]:
    return [f.record for f in JournalScan(server.data_dir / "sessions" / sid / "journal")]


def model_call_ids(recs: list[dict[str, Any]]) -> list[tuple[int, list[str]]]:
    """Per `model_call_ended`: the model call's sequence and its tool calls' ids."""
    return [(r["started"], [b["id"] for b in r["result"]["message"]["content"]
                            if b["type"] == "tool_call"])
            for r in recs if r["kind"] == "model_call_ended"]


def tool_call_started_ids(recs: list[dict[str, Any]]) -> list[str]:
    return [r["invocation"]["id"] for r in recs if r["kind"] == "tool_call_started"]


def test_a_models_tool_calls_without_ids_get_unique_ids(
        server: BrainServer, fakes: tuple[FakeServer, FakeServer]) -> None:
    openai, _ = fakes
    openai.answer(json_answer(200, openai_tool_calls("a", "b")), json_answer(200, OPENAI_DONE),
                  json_answer(200, openai_tool_calls("c")), json_answer(200, OPENAI_DONE))
    sid = server.create_session(model="openai", tools=["echo"])["id"]
    for text in ("first", "second"):
        answer = server.send(sid, text)
        assert (answer["status"], answer["output"]) == ("ended", "done"), answer
    recs = records(server, sid)
    (first, ids1), _, (second, ids2), _ = model_call_ids(recs)
    assert ids1 == [f"call_{first}_0", f"call_{first}_1"] and ids2 == [f"call_{second}_0"]
    assert tool_call_started_ids(recs) == ids1 + ids2  # the loop passed the assigned ids on
    results = [b["tool_call_id"] for r in recs if r["kind"] == "transcript_changed"
               for m in r["items"] if m["role"] == "tool" for b in m["content"]]
    assert results == ids1 + ids2
    # The next request sent the model the assigned ids, paired.
    sent = openai.requests[-1].body["messages"]
    assert [c["id"] for m in sent for c in m.get("tool_calls") or []] == ids1 + ids2
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ids1 + ids2


def test_an_anthropic_tool_use_without_an_id_gets_one(
        server: BrainServer, fakes: tuple[FakeServer, FakeServer]) -> None:
    _, anthropic = fakes
    anthropic.answer(
        json_answer(200, anthropic_message(
            [{"type": "tool_use", "name": "echo", "input": {"text": "a"}}], "tool_use")),
        json_answer(200, anthropic_message([{"type": "text", "text": "done"}], "end_turn")))
    sid = server.create_session(model="claude", tools=["echo"])["id"]
    answer = server.send(sid, "go")
    assert (answer["status"], answer["output"]) == ("ended", "done"), answer
    recs = records(server, sid)
    [(started, ids), _] = model_call_ids(recs)
    assert ids == [f"call_{started}_0"] == tool_call_started_ids(recs)


def test_a_tools_call_item_without_an_id_is_journaled_with_one(server: BrainServer) -> None:
    sid = server.create_session(agentloop="script", tools=["echo"])["id"]
    script = [{"op": "tools.call", "calls": [{"name": "echo", "input": {"text": "x"}},
                                             {"id": "", "name": "echo", "input": {"text": "y"}},
                                             {"id": "mine", "name": "echo", "input": {}}]}]
    answer = server.send(sid, json.dumps(script))
    assert answer["status"] == "ended", answer
    started = [r for r in records(server, sid) if r["kind"] == "tool_call_started"]
    assert [r["invocation"]["id"] for r in started] == [
        f"call_{started[0]['seq']}", f"call_{started[1]['seq']}", "mine"]
