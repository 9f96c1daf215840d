"""setup, detach, teardown, the dispatcher, and the `host` kind."""

from __future__ import annotations

import pickle
import threading
import time
from pathlib import Path

import pytest

from brain.effects import Outcome
from brain.environments import (
    HOST_ENVIRONMENTS_MESSAGE,
    EnvironmentOpError,
    LocalEnvironment,
    open_environment,
    run_environment_op,
)


def op(env: LocalEnvironment, name: str, request: dict | None = None) -> dict:
    return run_environment_op(env, name, request or {}, None, threading.Event())


def test_setup_is_idempotent(tmp_path):
    env = LocalEnvironment(tmp_path / "environments" / "s1" / "work")
    assert op(env, "setup") == {"created": True}
    (env.root / "keep.txt").write_text("kept")
    assert op(env, "setup") == {"created": False}
    assert (env.root / "keep.txt").read_text() == "kept"


def test_setup_refuses_a_file_or_symlink_root(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(EnvironmentOpError):
        op(LocalEnvironment(tmp_path / "file"), "setup")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(EnvironmentOpError):
        op(LocalEnvironment(tmp_path / "link"), "setup")


def test_detach_returns_a_result_and_setup_reattaches(tmp_path):
    env = LocalEnvironment(tmp_path / "work")
    op(env, "setup")
    assert op(env, "detach") == {"detached": True}
    assert env.detached and env.root.is_dir()
    op(env, "setup")
    assert not env.detached


def test_teardown_removes_tree(tmp_path):
    env = LocalEnvironment(tmp_path / "work")
    op(env, "setup")
    op(env, "write", {"path": "a/b/c.txt", "content": "x"})
    assert op(env, "teardown") == {"removed": True}
    assert not env.root.exists()
    assert op(env, "teardown") == {"removed": False}


def test_teardown_does_not_follow_symlinks_out(tmp_path):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "keep.txt").write_text("keep")
    env = LocalEnvironment(tmp_path / "work")
    op(env, "setup")
    (env.root / "dir_link").symlink_to(outside)
    (env.root / "file_link").symlink_to(outside / "deep" / "keep.txt")
    (env.root / "sub").mkdir()
    (env.root / "sub" / "nested_link").symlink_to(outside / "deep")
    op(env, "teardown")
    assert not env.root.exists()
    assert (outside / "deep" / "keep.txt").read_text() == "keep"


def test_teardown_refuses_symlink_root(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(EnvironmentOpError) as caught:
        op(LocalEnvironment(tmp_path / "link"), "teardown")
    assert caught.value.outcome == "error"
    assert (target / "keep.txt").exists()


def test_unknown_op_and_bad_request(tmp_path):
    env = LocalEnvironment(tmp_path / "work")
    with pytest.raises(EnvironmentOpError):
        op(env, "format")
    with pytest.raises(EnvironmentOpError):
        run_environment_op(env, "read", ["not", "a", "dict"], None, threading.Event())


def test_unexpected_fault_is_unknown_except_for_read(tmp_path, monkeypatch):
    env = LocalEnvironment(tmp_path / "work")

    def broken(*args):
        raise RuntimeError("internal /secret/path")

    monkeypatch.setattr(env, "write", broken)
    monkeypatch.setattr(env, "read", broken)
    with pytest.raises(EnvironmentOpError) as caught:
        op(env, "write", {"path": "f", "content": "x"})
    assert caught.value.outcome == "unknown" and "secret" not in caught.value.message
    with pytest.raises(EnvironmentOpError) as caught:
        op(env, "read", {"path": "f"})
    assert caught.value.outcome == "error"


def test_error_outcomes_are_validated():
    with pytest.raises(ValueError):
        EnvironmentOpError("ok", "x")
    with pytest.raises(ValueError):
        EnvironmentOpError("maybe", "x")
    error = EnvironmentOpError("timeout", "t")
    assert (error.outcome, error.message) == (Outcome.TIMEOUT, "t")
    assert pickle.loads(pickle.dumps(error)).outcome is Outcome.TIMEOUT


def test_open_environment(tmp_path: Path):
    env = open_environment({"kind": "local"}, tmp_path / "w")
    assert isinstance(env, LocalEnvironment) and env.root == tmp_path / "w"
    with pytest.raises(EnvironmentOpError) as caught:
        open_environment({"kind": "host", "name": "h"}, tmp_path / "h")
    assert (caught.value.outcome, caught.value.message) == ("error", HOST_ENVIRONMENTS_MESSAGE)
    with pytest.raises(EnvironmentOpError):
        open_environment({"kind": "cloud"}, tmp_path / "c")


def test_root_must_be_absolute():
    with pytest.raises(ValueError):
        LocalEnvironment(Path("relative/root"))


class HostFailure(Exception):
    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome, self.message = outcome, message


def test_host_environment_sends_every_op_to_its_runner(tmp_path: Path):
    calls = []

    def runner(kind, name, op_name, request, deadline, cancel):
        calls.append((kind, name, op_name, request, deadline))
        if op_name == "read":
            return {"error": {"message": "no such file", "outcome": "error"}}
        if op_name == "write":
            raise HostFailure("unknown", "the host took it and went quiet")
        if op_name == "detach":
            return {"result": "not an object"}
        return {"result": {"op": op_name}}

    env = open_environment({"kind": "host", "name": "remote"}, tmp_path / "unused", runner)
    deadline = time.time() + 60
    assert run_environment_op(env, "setup", {}, deadline, threading.Event()) == {"op": "setup"}
    assert run_environment_op(env, "exec", {"argv": ["ls"]}, None, threading.Event()) \
        == {"op": "exec"}
    for name, outcome in (("read", "error"), ("write", "unknown"), ("detach", "unknown")):
        with pytest.raises(EnvironmentOpError) as caught:
            run_environment_op(env, name, {"path": "f"}, None, threading.Event())
        assert caught.value.outcome == outcome
    assert calls[0] == ("environment", "remote", "setup", {}, deadline)
    assert [c[2] for c in calls] == ["setup", "exec", "read", "write", "detach"]
    assert not (tmp_path / "unused").exists()  # a host Environment has nothing local
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(EnvironmentOpError) as caught:
        run_environment_op(env, "teardown", {}, None, cancel)
    assert caught.value.outcome == "cancelled" and len(calls) == 5  # not sent
