"""`read`/`write` confinement: every way out of the root is refused, and nothing is touched."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from brain.environments import EnvironmentOpError, LocalEnvironment, run_environment_op


@pytest.fixture
def env(tmp_path: Path) -> LocalEnvironment:
    env = LocalEnvironment(tmp_path / "env")
    env.setup()
    return env


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the root holding a file the Environment must never reach."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret")
    return out


def op(env: LocalEnvironment, name: str, request: dict) -> dict:
    return run_environment_op(env, name, request, None, threading.Event())


def refused(env: LocalEnvironment, name: str, request: dict) -> EnvironmentOpError:
    with pytest.raises(EnvironmentOpError) as caught:
        op(env, name, request)
    assert caught.value.outcome == "error"
    return caught.value


def test_write_then_read(env):
    assert op(env, "write", {"path": "notes/today.txt", "content": "héllo\n"}) == {"bytes": 7}
    assert (env.root / "notes" / "today.txt").read_text() == "héllo\n"
    result = op(env, "read", {"path": "notes/today.txt"})
    assert result == {"content": "héllo\n", "bytes": 7, "truncated": False}


def test_write_replaces_and_keeps_mode(env):
    target = env.root / "run.sh"
    target.write_text("old")
    target.chmod(0o755)
    op(env, "write", {"path": "run.sh", "content": "new"})
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o755
    assert sorted(os.listdir(env.root)) == ["run.sh"]  # no temporary file left behind


def test_inner_dot_dot_and_dot_are_allowed(env):
    op(env, "write", {"path": "./a/b/../c.txt", "content": "x"})
    assert (env.root / "a" / "c.txt").read_text() == "x"


def test_symlink_inside_root_is_followed(env):
    (env.root / "real").mkdir()
    (env.root / "real" / "f.txt").write_text("inside")
    (env.root / "alias").symlink_to("real")
    assert op(env, "read", {"path": "alias/f.txt"})["content"] == "inside"


def test_read_is_size_limited(tmp_path):
    env = LocalEnvironment(tmp_path / "env", read_limit=10)
    env.setup()
    (env.root / "big.txt").write_text("0123456789abcdef")
    assert op(env, "read", {"path": "big.txt"}) == {
        "content": "0123456789",
        "bytes": 16,
        "truncated": True,
    }


def test_write_is_size_limited(tmp_path):
    env = LocalEnvironment(tmp_path / "env", write_limit=4)
    env.setup()
    refused(env, "write", {"path": "f", "content": "12345"})
    assert not (env.root / "f").exists()


# -- escapes ------------------------------------------------------------------------------------

ESCAPES = ["../x", "/etc/passwd", "a/../../x", "..", "../outside/secret.txt", "./../x"]


@pytest.mark.parametrize("path", ESCAPES)
def test_read_escape_refused(env, outside, path):
    error = refused(env, "read", {"path": path})
    assert "escapes" in error.message


@pytest.mark.parametrize("path", ESCAPES)
def test_write_escape_refused(env, outside, path):
    refused(env, "write", {"path": path, "content": "pwned"})
    assert (outside / "secret.txt").read_text() == "top secret"
    assert not (env.root.parent / "x").exists()


def test_symlink_to_outside_file_refused(env, outside):
    (env.root / "link").symlink_to(outside / "secret.txt")
    error = refused(env, "read", {"path": "link"})
    assert "escapes" in error.message
    refused(env, "write", {"path": "link", "content": "pwned"})
    assert (outside / "secret.txt").read_text() == "top secret"


def test_absolute_symlink_to_etc_refused(env):
    (env.root / "passwd").symlink_to("/etc/passwd")
    refused(env, "read", {"path": "passwd"})


def test_symlinked_parent_directory_refused(env, outside):
    (env.root / "dir").symlink_to(outside)
    refused(env, "read", {"path": "dir/secret.txt"})
    refused(env, "write", {"path": "dir/secret.txt", "content": "pwned"})
    refused(env, "write", {"path": "dir/new.txt", "content": "pwned"})
    assert (outside / "secret.txt").read_text() == "top secret"
    assert not (outside / "new.txt").exists()


def test_relative_symlink_climbing_out_refused(env, outside):
    (env.root / "up").symlink_to("../outside")
    refused(env, "read", {"path": "up/secret.txt"})


def test_symlink_to_root_itself_refused(env):
    (env.root / "self").symlink_to(".")
    refused(env, "read", {"path": "self"})


def test_symlink_loop_refused(env):
    (env.root / "a").symlink_to("b")
    (env.root / "b").symlink_to("a")
    refused(env, "read", {"path": "a"})
    refused(env, "write", {"path": "a/x", "content": "x"})


def test_swapped_parent_is_not_followed(env, outside, monkeypatch):
    """A directory replaced by a symlink between the check and the open does not escape."""
    from brain.environments import local, paths

    (env.root / "d").mkdir()
    real_confined_parts = paths.confined_parts

    def check_then_swap(root, path):
        parts = real_confined_parts(root, path)
        (env.root / "d").rmdir()
        (env.root / "d").symlink_to(outside)
        return parts

    monkeypatch.setattr(local, "confined_parts", check_then_swap)
    refused(env, "write", {"path": "d/secret.txt", "content": "pwned"})
    assert (outside / "secret.txt").read_text() == "top secret"


@pytest.mark.parametrize("path", ["", ".", "a/..", None, 5, "a\x00b"])
def test_bad_paths_refused(env, path):
    refused(env, "read", {"path": path})
    refused(env, "write", {"path": path, "content": "x"})


def test_read_missing_file(env):
    assert "no such file" in refused(env, "read", {"path": "nope.txt"}).message


def test_read_directory_refused(env):
    (env.root / "sub").mkdir()
    refused(env, "read", {"path": "sub"})


def test_write_over_directory_refused(env):
    (env.root / "sub").mkdir()
    refused(env, "write", {"path": "sub", "content": "x"})
    assert (env.root / "sub").is_dir()


def test_read_fifo_refused_without_blocking(env):
    os.mkfifo(env.root / "pipe")
    refused(env, "read", {"path": "pipe"})


def test_write_content_must_be_string(env):
    refused(env, "write", {"path": "f", "content": 5})
    refused(env, "write", {"path": "f"})


def test_messages_do_not_reveal_server_paths(env):
    for path in ["../x", "missing.txt"]:
        assert str(env.root) not in refused(env, "read", {"path": path}).message


def test_read_before_setup_is_error(tmp_path):
    env = LocalEnvironment(tmp_path / "never")
    refused(env, "read", {"path": "f"})
    refused(env, "write", {"path": "f", "content": "x"})
    assert not env.root.exists()
