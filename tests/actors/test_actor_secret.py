"""The actor secret: made once per data dir (0600), or read from BRAIN_ACTOR_SECRET_FILE."""

from __future__ import annotations

import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from brain.actors.actor_secret import (
    SECRET_BYTES,
    SECRET_FILE,
    ActorSecretError,
    ensure_actor_secret,
    read_actor_secret,
)
from brain.settings import Settings


def settings_for(data_dir: Path, secret_file: Path | None = None) -> Settings:
    env = {"BRAIN_DATA_DIR": str(data_dir)}
    if secret_file is not None:
        env["BRAIN_ACTOR_SECRET_FILE"] = str(secret_file)
    return Settings.from_env(env)


def test_the_first_start_makes_a_private_secret_that_later_starts_read(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "data")
    with pytest.raises(ActorSecretError, match="has not started"):
        read_actor_secret(settings)
    secret = ensure_actor_secret(settings)
    path = tmp_path / "data" / SECRET_FILE
    assert len(secret) == SECRET_BYTES
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == secret
    assert ensure_actor_secret(settings) == read_actor_secret(settings) == secret
    assert [p.name for p in path.parent.iterdir()] == [SECRET_FILE]  # no temporary left
    other = settings_for(tmp_path / "other")
    assert ensure_actor_secret(other) != secret  # one per data dir


def _make(data_dir: str, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    results.put(ensure_actor_secret(settings_for(Path(data_dir))))


def test_processes_starting_at_once_end_with_one_secret(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    starts = [context.Process(target=_make, args=(str(tmp_path / "data"), results))
              for _ in range(4)]
    for start in starts:
        start.start()
    secrets = {results.get(timeout=30) for _ in starts}
    for start in starts:
        start.join(30)
    assert secrets == {(tmp_path / "data" / SECRET_FILE).read_bytes()}


def test_a_configured_secret_file_is_read_and_never_made(tmp_path: Path) -> None:
    shared = tmp_path / "shared.secret"
    settings = settings_for(tmp_path / "data", shared)
    with pytest.raises(ActorSecretError, match="does not exist$"):
        ensure_actor_secret(settings)
    assert not shared.exists() and not (tmp_path / "data" / SECRET_FILE).exists()
    fd = os.open(shared, os.O_WRONLY | os.O_CREAT, 0o640)  # a group may share it
    os.write(fd, b"k" * 40 + b"\n")
    os.close(fd)
    assert ensure_actor_secret(settings) == read_actor_secret(settings) == b"k" * 40 + b"\n"


@pytest.mark.parametrize(("content", "mode", "refusal"), [
    (b"short", 0o600, "holds 5 bytes; at least 32"),
    (b"k" * 32, 0o644, "readable or writable by every user"),
    (b"k" * 32, 0o602, "readable or writable by every user"),
])
def test_a_weak_or_exposed_secret_is_refused_without_quoting_it(
        tmp_path: Path, content: bytes, mode: int, refusal: str) -> None:
    shared = tmp_path / "shared.secret"
    shared.write_bytes(content)
    shared.chmod(mode)
    with pytest.raises(ActorSecretError, match=refusal) as raised:
        ensure_actor_secret(settings_for(tmp_path / "data", shared))
    assert content.decode() not in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_configured_link_is_followed_but_the_data_dirs_own_secret_is_never_a_link(
        tmp_path: Path) -> None:
    real = tmp_path / "real.secret"
    real.write_bytes(b"k" * 32)
    real.chmod(0o600)
    link = tmp_path / "link.secret"
    link.symlink_to(real)
    assert ensure_actor_secret(settings_for(tmp_path / "data", link)) == b"k" * 32
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / SECRET_FILE).symlink_to(real)
    with pytest.raises(ActorSecretError, match="cannot be read"):
        ensure_actor_secret(settings_for(tmp_path / "data"))
    with pytest.raises(ActorSecretError, match="not a regular file"):
        ensure_actor_secret(settings_for(tmp_path / "data", tmp_path))
