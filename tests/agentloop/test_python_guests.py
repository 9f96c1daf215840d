"""Python Agentloops built into components run under the same fences as C ones (issue 29).

Real components, built by `brain agentloop build` (tests/support/python_guests.py), run by the
real AgentloopRuntime; the guest calls are answered by a function standing in for the session.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from brain.agentloop import ActivationStopper, AgentloopError, AgentloopRuntime
from brain.agentloop.build import BuildError, build
from tests.support.python_guests import (
    BUILD_DIR,
    TEST_LOOPS,
    other_world_component,
    python_guest,
)

PAYLOAD = {"kind": "turn", "session_id": "s1", "turn": 7, "input": "hi",
           "limits": {"max_model_calls": 8}}


class Session:
    """Answers guest calls as a session would, and remembers them."""

    def __init__(self, model_replies: list[dict[str, Any]] | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.transcript: list[dict[str, Any]] = []
        self.kv: dict[str, Any] = {}
        self.replies = list(model_replies or [])

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(request)
        op = request["op"]
        if op == "transcript.read":
            return {"messages": list(self.transcript), "through_sequence": 3}
        if op == "transcript.set":
            self.transcript = request["messages"]
            return {"sequence": 10 + len(self.calls)}
        if op == "kv.read":
            key = request["key"]
            return {"found": key in self.kv, "value": self.kv.get(key)}
        if op == "kv.put":
            self.kv[request["key"]] = request["value"]
            return {"sequence": 10 + len(self.calls)}
        if op == "model.call":
            if not self.replies:
                return {"error": {"code": "model_call_limit", "message": "no more calls"}}
            return self.replies.pop(0)
        if op == "tools.call":
            return {"results": [{"content": f"ran {c['name']}", "is_error": False,
                                 "outcome": "ok"} for c in request["calls"]]}
        if op == "telemetry.record":
            return {}
        return {"error": {"code": "invalid_request", "message": f"unknown op {op!r}"}}


def text_reply(text: str) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
            "stop_reason": "end_turn", "usage": {}}


@pytest.fixture(scope="module")
def runtime() -> AgentloopRuntime:
    """Its cache is where python_guest() keeps each component's compiled artifact, so a test
    loads it as a started server does instead of waiting for a compile it is not about
    (compiling is test_a_stored_artifact_is_loaded_not_compiled's and the build tests')."""
    return AgentloopRuntime(memory_limit_bytes=256 << 20, cache_dir=BUILD_DIR)


@pytest.fixture(scope="module")
def bad_guest(runtime: AgentloopRuntime) -> Path:
    """Ready before the tests that give it a deadline, as `brain serve` makes it at start."""
    path = python_guest("bad_guest")
    runtime.prepare(path)
    return path


def run(runtime: AgentloopRuntime, guest: Path, text: str, session: Session | None = None,
        deadline_secs: float = 10.0, stopper: ActivationStopper | None = None) -> dict[str, Any]:
    return runtime.activate(guest, {**PAYLOAD, "input": text}, session or Session(),
                            time.monotonic() + deadline_secs, stopper)


def test_the_python_default_loop_runs_tools_until_the_model_answers(
        runtime: AgentloopRuntime) -> None:
    call = {"type": "tool_call", "id": "c1", "name": "calculator", "input": {"x": 1}}
    session = Session([{"message": {"role": "assistant", "content": [call]},
                        "stop_reason": "tool_use"}, text_reply("it is 2")])
    result = runtime.activate(python_guest("default_loop"), PAYLOAD, session, None)
    assert result == {"status": "completed", "output": "it is 2"}
    assert [c["op"] for c in session.calls] == [
        "transcript.read", "transcript.set", "model.call", "transcript.set", "tools.call",
        "transcript.set", "model.call", "transcript.set"]
    assert session.calls[4]["calls"] == [{"id": "c1", "name": "calculator", "input": {"x": 1}}]
    assert [m["role"] for m in session.transcript] == ["user", "assistant", "tool", "assistant"]
    assert session.transcript[2]["content"][0] == {
        "type": "tool_result", "tool_call_id": "c1", "content": "ran calculator",
        "is_error": False}


def test_the_guest_echoes_the_transcript_so_brain_decodes_only_what_is_new(
        runtime: AgentloopRuntime) -> None:
    """After the first whole list, each request starts with the text Brain already holds:
    Brain decodes the new messages alone (its decoded list then carries the array's text)."""
    session = Session([text_reply("first")])
    session.transcript = [{"role": "user", "content": [{"type": "text", "text": "earlier"}]},
                          {"role": "assistant", "content": [{"type": "text", "text": "é"}]}]
    runtime.activate(python_guest("default_loop"), PAYLOAD, session, None)
    sends = [c for c in session.calls if c["op"] in ("transcript.set", "model.call")]
    assert [type(c["messages"]).__name__ for c in sends] == ["TranscriptList"] * 3
    assert [m["content"][0]["text"] for m in session.transcript] == [
        "earlier", "é", "hi", "first"]


def test_a_plain_list_that_grows_is_echoed_too(runtime: AgentloopRuntime,
                                               bad_guest: Path) -> None:
    session = Session([text_reply("answer")])
    session.transcript = [{"role": "user", "content": [{"type": "text", "text": "old"}]}]
    assert run(runtime, bad_guest, "list", session)["output"] == 3
    sends = [c for c in session.calls if c["op"] in ("transcript.set", "model.call")]
    assert [type(c["messages"]).__name__ for c in sends] == ["TranscriptList"] * 3
    assert [m["content"][0]["text"] for m in session.transcript] == ["old", "list", "answer"]


def test_a_message_edited_in_place_is_sent_whole(runtime: AgentloopRuntime,
                                                 bad_guest: Path) -> None:
    session = Session()
    session.transcript = [{"role": "user", "content": [{"type": "text", "text": "old"}]}]
    assert run(runtime, bad_guest, "edit", session)["output"] == 2
    assert [m["content"][0]["text"] for m in session.transcript] == ["edited", "edit"]


def test_a_guest_call_error_fails_the_turn_with_its_code(runtime: AgentloopRuntime) -> None:
    result = runtime.activate(python_guest("default_loop"), PAYLOAD, Session([]), None)
    assert result == {"status": "failed",
                      "error": {"code": "model_call_limit", "message": "no more calls"}}


def test_the_turn_counter_counts_in_kv_across_fresh_instances(
        runtime: AgentloopRuntime) -> None:
    guest = python_guest("turn_counter")
    session = Session([text_reply("a"), text_reply("b")])
    outputs = [runtime.activate(guest, PAYLOAD, session, None)["output"] for _ in range(2)]
    assert outputs == ["#1: a", "#2: b"]
    assert session.kv == {"turns": 2}


def test_the_host_script_example_sends_each_request_and_returns_every_result(
        runtime: AgentloopRuntime) -> None:
    import json

    session = Session()
    script = [{"op": "kv.put", "key": "k", "value": 1}, {"op": "kv.read", "key": "k"},
              {"op": "no.such"}]
    result = runtime.activate(python_guest("host_script"),
                              {**PAYLOAD, "input": json.dumps(script)}, session, None)
    assert result["status"] == "completed"
    assert result["output"][1] == {"found": True, "value": 1}
    assert result["output"][2]["error"]["code"] == "invalid_request"
    refused = runtime.activate(python_guest("host_script"), {**PAYLOAD, "input": "not json"},
                               session, None)
    assert refused["error"]["code"] == "invalid_request"


def test_an_uncaught_exception_names_its_type_message_and_line(
        runtime: AgentloopRuntime, bad_guest: Path) -> None:
    session = Session()
    result = run(runtime, bad_guest, "raise", session)
    assert result["status"] == "failed"
    assert result["error"]["code"] == "agentloop_error"
    message = result["error"]["message"]
    assert message.startswith("ValueError: the loop gave up (bad_guest.py, line ")
    assert "in activate" in message and "brain/" not in message
    assert session.kv == {"before": "committed"}  # what it did first stays done


def test_turn_failed_carries_the_loops_own_code(runtime: AgentloopRuntime,
                                                bad_guest: Path) -> None:
    assert run(runtime, bad_guest, "fail")["error"] == {
        "code": "my_code", "message": "the loop chose to fail"}


def test_an_infinite_loop_is_stopped_at_the_deadline(runtime: AgentloopRuntime,
                                                     bad_guest: Path) -> None:
    with pytest.raises(AgentloopError) as caught:
        run(runtime, bad_guest, "spin", deadline_secs=0.5)
    assert caught.value.code == "turn_timeout"


def test_a_cancel_stops_a_spinning_python_guest(runtime: AgentloopRuntime,
                                                bad_guest: Path) -> None:
    import threading

    stopper = ActivationStopper()
    threading.Timer(0.3, stopper.stop).start()
    with pytest.raises(AgentloopError) as caught:
        run(runtime, bad_guest, "spin", deadline_secs=30, stopper=stopper)
    assert caught.value.code == "cancelled"


def test_a_2_gib_allocation_meets_the_memory_limit(runtime: AgentloopRuntime,
                                                   bad_guest: Path) -> None:
    result = run(runtime, bad_guest, "alloc")
    assert result["status"] == "failed" and result["error"]["code"] == "agentloop_error"
    assert result["error"]["message"].startswith("MemoryError")


def test_malformed_requests_get_error_results_and_the_guest_goes_on(
        runtime: AgentloopRuntime, bad_guest: Path) -> None:
    result = run(runtime, bad_guest, "malformed")
    assert result["status"] == "completed"
    codes = [answer["error"]["code"] for answer in result["output"]]
    assert codes == ["invalid_request", "invalid_request", "invalid_request"]


def test_no_clock_and_no_late_imports_each_say_so(runtime: AgentloopRuntime,
                                                  bad_guest: Path) -> None:
    clock = run(runtime, bad_guest, "clock")["error"]["message"]
    assert clock.startswith("RuntimeError: an Agentloop has no clock")
    late = run(runtime, bad_guest, "import")["error"]["message"]
    assert late.startswith("ImportError: No module named 'csv' was imported when the "
                           "Agentloop was built")


def test_random_repeats_in_every_fresh_instance(runtime: AgentloopRuntime,
                                                bad_guest: Path) -> None:
    draws = {run(runtime, bad_guest, "random")["output"] for _ in range(3)}
    assert len(draws) == 1  # what a resumed activation relies on


def test_print_goes_to_telemetry(runtime: AgentloopRuntime, bad_guest: Path) -> None:
    session = Session()
    assert run(runtime, bad_guest, "print", session)["output"] == "printed"
    assert {"op": "telemetry.record", "name": "agentloop.print",
            "value": "hello from the guest", "attributes": {"stream": "stdout"}} in session.calls


def test_an_output_that_is_not_json_fails_with_a_hint(runtime: AgentloopRuntime,
                                                      bad_guest: Path) -> None:
    message = run(runtime, bad_guest, "unserializable")["error"]["message"]
    assert message.startswith("TypeError: Object of type set is not JSON serializable")
    assert "activate must return a JSON value" in message


def test_the_host_ending_the_activation_unwinds_the_guest(runtime: AgentloopRuntime,
                                                          bad_guest: Path) -> None:
    def suspend(request: dict[str, Any]) -> dict[str, Any]:
        raise AgentloopError("suspended", "the turn was suspended")

    with pytest.raises(AgentloopError) as caught:
        runtime.activate(bad_guest, {**PAYLOAD, "input": "model"}, suspend, None)
    assert caught.value.code == "suspended"
    assert run(runtime, bad_guest, "fail")["error"]["code"] == "my_code"  # next one is fine


@pytest.mark.slow_e2e  # componentize-py imports the loop on its own Python, inside Wasm
def test_an_exception_at_import_time_fails_the_build(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as caught:
        build(TEST_LOOPS / "raises_on_import.py", tmp_path / "x.wasm")
    assert "RuntimeError: configuration missing at import" in str(caught.value)
    assert not (tmp_path / "x.wasm").exists()


@pytest.mark.parametrize("world, expected", [
    ("wrong_export", "does not export `activate: func(payload: string) -> string` "
                     "(it exports run)"),
    ("old_version", "it imports brain:agentloop/host@0.9.0, built for another version of the "
                    "Agentloop world; this Brain provides brain:agentloop@1.0.0"),
])
def test_a_component_of_another_world_is_refused_by_name(
        runtime: AgentloopRuntime, world: str, expected: str) -> None:
    with pytest.raises(AgentloopError) as caught:
        runtime.activate(other_world_component(world), PAYLOAD, Session(), None)
    assert caught.value.code == "agentloop_error"
    assert expected in caught.value.message


def refuse_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, a compile anywhere in brain.agentloop.modules fails the test."""
    import brain.agentloop.modules as modules

    def refuse(*args: Any) -> None:
        raise AssertionError("compiled on the request path")

    monkeypatch.setattr(modules, "compile_component", refuse)


@pytest.mark.slow_e2e  # a real compile of a component: Wasm, the same on any Python
def test_a_stored_artifact_is_loaded_not_compiled(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from brain.agentloop.engine import ProcessEngine
    from brain.agentloop.precompile import precompile

    guest = python_guest("turn_counter")
    [done] = precompile([str(guest)], tmp_path)
    assert done.action == "compiled"
    refuse_compiles(monkeypatch)
    assert precompile([str(guest)], tmp_path)[0].action == "cached"
    cache = ProcessEngine().modules  # a new Engine, as in a freshly started actor process
    compiled = cache.get(guest, str(tmp_path))
    assert compiled.sha256 in {p.name.split("-")[0] for p in tmp_path.iterdir()}
