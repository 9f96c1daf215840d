"""`exec`: real subprocesses in a real directory, killed as a group, with a scrubbed environment."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from brain.environments import EnvironmentOpError, LocalEnvironment, run_environment_op
from tests.environments.procs import alive, living_in, wait_until_gone


@pytest.fixture
def env(tmp_path: Path):
    env = LocalEnvironment(tmp_path / "env")
    env.setup()
    yield env
    assert wait_until_gone(env.root) == [], "a test left processes running in the environment"


def run(env: LocalEnvironment, request: dict, deadline: float | None = None, cancel=None) -> dict:
    return run_environment_op(env, "exec", request, deadline, cancel or threading.Event())


def failure(env: LocalEnvironment, request: dict, **kwargs) -> EnvironmentOpError:
    with pytest.raises(EnvironmentOpError) as caught:
        run(env, request, **kwargs)
    return caught.value


def test_exec_ok(env):
    result = run(env, {"argv": ["sh", "-c", "echo out; echo err >&2; pwd"]})
    assert result == {
        "exit_code": 0,
        "stdout": f"out\n{env.root}\n",
        "stderr": "err\n",
        "truncated": False,
    }


def test_exec_nonzero_exit_is_a_result(env):
    result = run(env, {"argv": ["sh", "-c", "echo bad >&2; exit 7"]})
    assert (result["exit_code"], result["stderr"]) == (7, "bad\n")


def test_exec_killed_by_signal_reports_negative_code(env):
    assert run(env, {"argv": ["sh", "-c", "kill -TERM $$"]})["exit_code"] == -15


def test_exec_stdin(env):
    result = run(env, {"argv": ["cat"], "stdin": "line one\nline two\n"})
    assert result["stdout"] == "line one\nline two\n"


def test_exec_large_stdin_and_output(env):
    data = "x" * (3 << 20)
    result = run(env, {"argv": ["wc", "-c"], "stdin": data})
    assert result["stdout"].strip() == str(3 << 20)


def test_exec_no_shell(env):
    result = run(env, {"argv": ["echo", "$HOME", ";", "rm", "-rf", "*"]})
    assert result["stdout"] == "$HOME ; rm -rf *\n"


def test_exec_timeout_kills_sleep(env):
    started = time.monotonic()
    error = failure(env, {"argv": ["sleep", "30"]}, deadline=time.time() + 0.5)
    assert error.outcome == "timeout"
    assert time.monotonic() - started < 1.5
    assert living_in(env.root) == []


def test_exec_timeout_s_kills_the_whole_group(env):
    """A grandchild in the same group is killed too, not just the direct child."""
    script = "sleep 30 & echo $! > child.pid; wait"
    error = failure(env, {"argv": ["sh", "-c", script], "timeout_s": 0.5})
    assert error.outcome == "timeout"
    child = int((env.root / "child.pid").read_text())
    deadline = time.monotonic() + 2
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(child)
    assert living_in(env.root) == []


def test_exec_timeout_s_and_deadline_take_the_sooner(env):
    started = time.monotonic()
    error = failure(env, {"argv": ["sleep", "30"], "timeout_s": 20}, deadline=time.time() + 0.3)
    assert error.outcome == "timeout" and time.monotonic() - started < 1


def test_exec_cancel_kills(env):
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    try:
        started = time.monotonic()
        error = failure(env, {"argv": ["sh", "-c", "sleep 30 & sleep 30"]}, cancel=cancel)
    finally:
        timer.cancel()
    assert error.outcome == "cancelled"
    assert time.monotonic() - started < 1
    assert living_in(env.root) == []


def test_background_processes_do_not_outlive_exec(env):
    started = time.monotonic()
    result = run(env, {"argv": ["sh", "-c", "sleep 30 & echo started"]})
    assert result["stdout"] == "started\n"
    assert time.monotonic() - started < 2
    assert wait_until_gone(env.root) == []


def test_output_is_truncated_at_the_limit(tmp_path):
    env = LocalEnvironment(tmp_path / "small", output_limit=1000)
    env.setup()
    result = run(env, {"argv": ["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a; echo e >&2"]})
    assert result["stdout"] == "a" * 1000
    assert result["stderr"] == "e\n"
    assert result["truncated"] is True


def test_default_limit_is_one_mib_and_child_is_drained(env):
    # 3 MiB is more than any pipe buffer: the child would block forever if we stopped reading.
    result = run(env, {"argv": ["head", "-c", str(3 << 20), "/dev/zero"]}, time.time() + 10)
    assert len(result["stdout"]) == 1 << 20
    assert result["truncated"] is True and result["exit_code"] == 0


def test_environment_is_scrubbed(env, monkeypatch):
    monkeypatch.setenv("BRAIN_TEST_SECRET", "hunter2")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    result = run(env, {"argv": ["env"]})
    variables = dict(line.split("=", 1) for line in result["stdout"].splitlines())
    assert variables == {"PATH": "/usr/bin:/bin", "HOME": str(env.root), "LANG": "C.UTF-8"}
    assert "hunter2" not in result["stdout"] and "sk-secret" not in result["stdout"]


def test_command_not_found_is_error(env):
    error = failure(env, {"argv": ["no-such-command-here"]})
    assert error.outcome == "error" and "not found" in error.message


@pytest.mark.parametrize(
    "request_",
    [
        {},
        {"argv": []},
        {"argv": "ls -l"},
        {"argv": ["ls", 3]},
        {"argv": [""]},
        {"argv": ["ls"], "stdin": 5},
        {"argv": ["ls"], "timeout_s": 0},
        {"argv": ["ls"], "timeout_s": "5"},
    ],
)
def test_bad_requests_are_errors(env, request_):
    assert failure(env, request_).outcome == "error"


def test_exec_before_setup_is_error(tmp_path):
    env = LocalEnvironment(tmp_path / "never")
    assert failure(env, {"argv": ["true"]}).outcome == "error"


def test_cancelled_or_expired_before_start_runs_nothing(env):
    cancel = threading.Event()
    cancel.set()
    marker = ["sh", "-c", "touch ran"]
    assert failure(env, {"argv": marker}, cancel=cancel).outcome == "cancelled"
    assert failure(env, {"argv": marker}, deadline=time.time() - 1).outcome == "timeout"
    assert not (env.root / "ran").exists()
