"""run_tool's routes other than http, the builtins, and the ToolOutcome rules."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from brain.effects import EffectFailed
from brain.environments import EnvironmentOpError, LocalEnvironment, run_environment_op
from brain.tools import HOST_TOOLS_MESSAGE, ToolOutcome, run_tool


def builtin(function: str, value: object, **kwargs) -> ToolOutcome:
    kwargs.setdefault("deadline", None)
    kwargs.setdefault("cancel", threading.Event())
    tool = {"name": function, "route": "builtin", "function": function}
    return run_tool(tool, {"id": "c1", "input": value}, session_id="s", sequence=3, **kwargs)


def assert_failed(result: ToolOutcome, outcome: str) -> None:
    assert (result.outcome, result.is_error) == (outcome, True), result
    assert isinstance(result.content, str) and result.content


# -- builtins ---------------------------------------------------------------------------------


def test_echo_returns_input():
    value = {"a": [1, "two", None, {"b": True}]}
    assert builtin("echo", value) == ToolOutcome(value, False, "ok", [])


def test_sleep_completes():
    result = builtin("sleep", {"seconds": 0.1})
    assert (result.outcome, result.is_error, result.content) == ("ok", False, {"slept": 0.1})


def test_sleep_past_deadline_is_timeout():
    started = time.monotonic()
    result = builtin("sleep", {"seconds": 30}, deadline=time.time() + 0.3)
    assert_failed(result, "timeout")
    assert time.monotonic() - started < 0.6


def test_sleep_cancelled_promptly():
    cancel = threading.Event()
    timer = threading.Timer(0.2, cancel.set)
    timer.start()
    try:
        started = time.monotonic()
        result = builtin("sleep", {"seconds": 30}, cancel=cancel)
        assert_failed(result, "cancelled")
        assert time.monotonic() - started < 0.5
    finally:
        timer.cancel()


@pytest.mark.parametrize("value", [{}, {"seconds": "1"}, {"seconds": -1}, {"seconds": True}, 3])
def test_sleep_bad_input_is_error(value):
    assert_failed(builtin("sleep", value), "error")


def test_fail_uses_message():
    result = builtin("fail", {"message": "nope"})
    assert_failed(result, "error")
    assert result.content == "nope"
    assert_failed(builtin("fail", None), "error")


def test_emit_returns_events():
    events = [{"kind": "progress", "data": {"pct": 50}}, {"kind": "note", "data": None}]
    result = builtin("emit", {"events": events})
    assert (result.outcome, result.is_error) == ("ok", False)
    assert result.events == events
    assert result.content == {"emitted": 2}
    assert builtin("emit", {"events": [], "content": "c"}).content == "c"


@pytest.mark.parametrize(
    "events",
    [
        "nope",
        [{"kind": "x"}],
        [{"kind": 3, "data": 1}],
        [{"kind": "x", "data": 1, "origin": {}}],
        [["kind", "data"]],
    ],
)
def test_emit_rejects_malformed_events(events):
    assert_failed(builtin("emit", {"events": events}), "error")


def test_unknown_builtin_is_error():
    assert_failed(builtin("rm_rf", {}), "error")


def test_builtin_exception_is_short_error(monkeypatch):
    from brain.tools import builtins

    def broken(value, call):
        raise RuntimeError("secret internal detail /srv/brain")

    monkeypatch.setitem(builtins.BUILTINS, "echo", broken)
    result = builtin("echo", {})
    assert_failed(result, "error")
    assert "secret" not in result.content and "Traceback" not in result.content


def test_cancel_or_deadline_before_start_runs_nothing(monkeypatch):
    from brain.tools import builtins

    ran = []
    monkeypatch.setitem(builtins.BUILTINS, "echo", lambda v, c: ran.append(v))
    cancel = threading.Event()
    cancel.set()
    assert_failed(builtin("echo", 1, cancel=cancel), "cancelled")
    assert_failed(builtin("echo", 1, deadline=time.time() - 1), "timeout")
    assert ran == []


# -- host and unknown routes, bad invocations -------------------------------------------------


def host(runner, value: object = None, **kwargs) -> ToolOutcome:
    kwargs.setdefault("deadline", None)
    kwargs.setdefault("cancel", threading.Event())
    return run_tool({"name": "ask", "route": "host"}, {"id": "c", "input": value},
                    session_id="s", sequence=1, host_runner=runner, **kwargs)


class Failed(EffectFailed):
    """What a runner raises for a call it reports as failed (HostCallFailed, in Brain)."""


class LooksFailed(Exception):
    """Has `outcome` and `message` attributes but is no EffectFailed: a fault, not a report."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome, self.message = outcome, message


def test_host_route_needs_a_runner():
    result = host(None)
    assert_failed(result, "error")
    assert result.content == HOST_TOOLS_MESSAGE


def test_host_route_passes_the_call_and_takes_the_answer():
    seen = []

    def runner(kind, name, op, payload, deadline, cancel):
        seen.append((kind, name, op, payload, deadline))
        return {"content": {"n": 1}, "is_error": True, "outcome": "ok",
                "events": [{"kind": "asked", "data": {}}]}

    deadline = time.time() + 60
    result = host(runner, {"q": 1}, deadline=deadline)
    assert seen == [("tool", "ask", None, {"q": 1}, deadline)]
    assert result == ToolOutcome({"n": 1}, True, "ok", [{"kind": "asked", "data": {}}])


def test_host_route_outcomes():
    def answering(answer):
        return lambda *args: answer

    def raising(exc):
        def runner(*args):
            raise exc
        return runner

    cancelled = host(answering({"content": "stopped", "is_error": True, "outcome": "cancelled",
                                "events": []}))
    assert (cancelled.outcome, cancelled.content) == ("cancelled", "stopped")
    for outcome in ("timeout", "unknown", "cancelled", "error"):
        result = host(raising(Failed(outcome, f"it was {outcome}")))
        assert_failed(result, outcome)
        assert result.content == f"it was {outcome}"
    assert_failed(host(raising(RuntimeError("bug"))), "unknown")
    assert_failed(host(raising(LooksFailed("error", "duck-typed"))), "unknown")
    assert_failed(host(answering({"is_error": False})), "unknown")  # no content: malformed
    ran = []
    cancel = threading.Event()
    cancel.set()
    assert_failed(host(lambda *a: ran.append(a), cancel=cancel), "cancelled")
    assert_failed(host(lambda *a: ran.append(a), deadline=time.time() - 1), "timeout")
    assert ran == []  # nothing is sent once cancelled or out of time


@pytest.mark.parametrize("tool", [{"name": "x", "route": "carrier-pigeon"}, {"name": "x"}, None])
def test_unknown_route_is_error(tool):
    result = run_tool(
        tool,
        {"id": "c", "input": {}},
        session_id="s",
        sequence=1,
        deadline=None,
        cancel=threading.Event(),
    )
    assert_failed(result, "error")


@pytest.mark.parametrize("invocation", [None, {"id": "c"}, "input"])
def test_bad_invocation_is_error(invocation):
    result = run_tool(
        {"name": "echo", "route": "builtin", "function": "echo"},
        invocation,
        session_id="s",
        sequence=1,
        deadline=None,
        cancel=threading.Event(),
    )
    assert_failed(result, "error")


# -- environment route ------------------------------------------------------------------------


def env_tool(op: str, value: object, runner, **kwargs) -> ToolOutcome:
    kwargs.setdefault("deadline", None)
    kwargs.setdefault("cancel", threading.Event())
    tool = {"name": "sh", "route": "environment", "environment": "work", "op": op}
    return run_tool(
        tool,
        {"id": "c", "input": value},
        session_id="s",
        sequence=1,
        environment_runner=runner,
        **kwargs,
    )


@pytest.fixture
def runner(tmp_path: Path):
    env = LocalEnvironment(tmp_path / "work")
    env.setup()
    calls = []

    def run(name, op, request, deadline, cancel):
        calls.append((name, op, request, deadline))
        assert name == "work"
        return run_environment_op(env, op, request, deadline, cancel)

    run.calls = calls
    return run


def test_environment_exec_result_is_content(runner):
    result = env_tool("exec", {"argv": ["echo", "hello"]}, runner)
    assert (result.outcome, result.is_error) == ("ok", False)
    assert result.content == {"exit_code": 0, "stdout": "hello\n", "stderr": "", "truncated": False}


def test_environment_nonzero_exit_is_still_ok(runner):
    result = env_tool("exec", {"argv": ["sh", "-c", "exit 3"]}, runner)
    assert result.outcome == "ok" and result.content["exit_code"] == 3


def test_environment_write_then_read(runner):
    assert env_tool("write", {"path": "a.txt", "content": "hi"}, runner).content == {"bytes": 2}
    assert env_tool("read", {"path": "a.txt"}, runner).content["content"] == "hi"


def test_environment_deadline_is_passed_and_timeout_mapped(runner):
    deadline = time.time() + 0.3
    result = env_tool("exec", {"argv": ["sleep", "30"]}, runner, deadline=deadline)
    assert_failed(result, "timeout")
    assert runner.calls[0][3] == deadline


def test_environment_cancel_mapped(runner):
    cancel = threading.Event()
    timer = threading.Timer(0.2, cancel.set)
    timer.start()
    try:
        assert_failed(
            env_tool("exec", {"argv": ["sleep", "30"]}, runner, cancel=cancel), "cancelled"
        )
    finally:
        timer.cancel()


def test_environment_op_error_mapped(runner):
    result = env_tool("read", {"path": "../etc/passwd"}, runner)
    assert_failed(result, "error")
    assert "escapes" in result.content


@pytest.mark.parametrize("outcome", ["error", "timeout", "cancelled", "unknown"])
def test_environment_error_outcomes_pass_through(outcome):
    def run(*args):
        raise EnvironmentOpError(outcome, "it went " + outcome)

    result = env_tool("exec", {"argv": ["true"]}, run)
    assert_failed(result, outcome)
    assert result.content == "it went " + outcome


def test_runner_crash_is_unknown():
    def run(*args):
        raise RuntimeError("boom")

    assert_failed(env_tool("exec", {"argv": ["true"]}, run), "unknown")


@pytest.mark.parametrize("op", ["setup", "teardown", "detach", "format"])
def test_lifecycle_ops_are_not_tool_ops(op, runner):
    assert_failed(env_tool(op, {}, runner), "error")
    assert runner.calls == []


def test_no_runner_is_error():
    assert_failed(env_tool("exec", {"argv": ["true"]}, None), "error")


def test_environment_input_must_be_object(runner):
    assert_failed(env_tool("exec", ["true"], runner), "error")


# -- ToolOutcome ------------------------------------------------------------------------------


def test_failure_outcomes_must_be_errors():
    with pytest.raises(ValueError):
        ToolOutcome("x", False, "unknown")
    with pytest.raises(ValueError):
        ToolOutcome("x", True, "maybe")
    with pytest.raises(ValueError):
        ToolOutcome.failed("ok", "x")


def test_to_dict_is_a_copy():
    outcome = ToolOutcome.ok({"a": [1]}, events=[{"kind": "k", "data": {"b": 1}}])
    d = outcome.to_dict()
    d["content"]["a"].append(2)
    d["events"][0]["data"]["b"] = 2
    assert outcome.content == {"a": [1]} and outcome.events[0]["data"] == {"b": 1}
    with pytest.raises(AttributeError):
        outcome.outcome = "error"  # type: ignore[misc]
