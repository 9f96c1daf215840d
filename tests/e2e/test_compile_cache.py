"""One cache of compiled Agentloops per machine, filled and read by `brain agentloop check`,
`brain serve` and `brain replay`; every compile announced on stderr; /healthz at once and
/readyz naming what a starting server still compiles. Real commands, a real server, a real
component built from Python (docs/agentloop.md, "Compiling")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests

from tests.support.python_guests import python_guest
from tests.support.server import configured
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow_e2e
COMMAND_TIMEOUT_SECS = 300.0


def brain(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BRAIN_AGENTLOOP_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "brain.cli", *args], capture_output=True,
                          text=True, timeout=COMMAND_TIMEOUT_SECS, env=env)


@pytest.fixture
def component(tmp_path: Path) -> Path:
    """A Python Agentloop component under a name of its own (the cache keys on content)."""
    mine = tmp_path / "mine.wasm"
    shutil.copy(python_guest("default_loop"), mine)
    return mine


def test_check_compiles_once_announcing_it_and_then_maps_the_cached_artifact(
        tmp_path: Path, component: Path) -> None:
    cache = tmp_path / "cache"
    first = brain(cache, "agentloop", "check", str(component))
    assert first.returncode == 0, first.stderr
    announced = [line for line in first.stderr.splitlines() if "Agentloop mine.wasm" in line]
    assert len(announced) == 2, first.stderr
    assert announced[0].startswith("brain: compiling Agentloop mine.wasm (")
    assert " MB)" in announced[0] and str(cache) in announced[0]
    assert announced[1].startswith("brain: compiled Agentloop mine.wasm (")
    assert announced[1].endswith(" s")
    assert [p.name for p in cache.iterdir() if p.suffix == ".cwasm"], "nothing was stored"
    assert oct(cache.stat().st_mode & 0o777) == "0o700"

    again = brain(cache, "agentloop", "check", str(component))
    assert again.returncode == 0, again.stderr
    assert "compiling" not in again.stderr
    assert "found compiled in the machine's cache" in again.stdout


def test_serve_answers_healthz_while_it_compiles_and_readyz_says_what(
        tmp_path: Path, component: Path) -> None:
    cache = tmp_path / "cache"
    server = configured(tmp_path, f'[agentloops.mine]\npath = "{component}"\n',
                        {"BRAIN_AGENTLOOP_CACHE": str(cache)})
    started = threading.Thread(target=server.start, daemon=True)
    started.start()
    try:
        def preparing() -> list[str] | None:
            try:
                health = requests.get(server.url + "/healthz", timeout=2)
                ready = requests.get(server.url + "/readyz", timeout=5)
            except requests.RequestException:
                return None
            if health.status_code == 200 and ready.status_code == 503:
                return ready.json().get("preparing")
            return None

        seen = wait_for(preparing, timeout=60, what="/readyz naming the compile")
        assert seen == [f"compiling Agentloop mine.wasm ({component.stat().st_size / 1e6:.1f} "
                        f"MB)"]
        started.join(timeout=120)
        assert not started.is_alive(), "the server did not become ready"
        assert requests.get(server.url + "/readyz", timeout=5).json() == {"status": "ready"}
        # The supervisor polls /readyz on its own clock: it may say "ready" a moment after
        # this test saw it.
        log = wait_for(lambda: server.log() if "Brain ready" in server.log() else None,
                       timeout=30, what="the supervisor saying Brain ready")
        assert "Brain serving on" in log and "Brain preparing: compiling Agentloop mine.wasm" in log
        assert "brain: compiled Agentloop mine.wasm" in log
        session = server.create_session(agentloop="mine")
        assert server.send(session["id"], "hello")["status"] == "ended"
    finally:
        server.kill()

    # A second server on the same machine cache compiles nothing.
    (tmp_path / "second").mkdir()
    again = configured(tmp_path / "second", f'[agentloops.mine]\npath = "{component}"\n',
                       {"BRAIN_AGENTLOOP_CACHE": str(cache)})
    again.start()
    try:
        assert "compiling Agentloop" not in again.log()
        assert "Brain preparing" not in again.log()
        sid = again.create_session(agentloop="mine")["id"]
        assert again.send(sid, "hello")["status"] == "ended"
        replay_cache = tmp_path / "replay-cache"
        replayed = brain(replay_cache, "replay", sid, "--data-dir", str(again.data_dir))
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "brain: compiling Agentloop mine.wasm" in replayed.stderr
        twice = brain(replay_cache, "replay", sid, "--data-dir", str(again.data_dir))
        assert twice.returncode == 0 and "compiling" not in twice.stderr, twice.stderr
    finally:
        again.kill()


def test_two_commands_meeting_a_new_file_compile_it_once(tmp_path: Path,
                                                         component: Path) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "BRAIN_AGENTLOOP_CACHE": str(cache)}
    command = [sys.executable, "-m", "brain.cli", "agentloop", "check", str(component)]
    both = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env) for _ in range(2)]
    said = [proc.communicate(timeout=COMMAND_TIMEOUT_SECS) for proc in both]
    assert [proc.returncode for proc in both] == [0, 0], said
    stderr = [err for _, err in said]
    assert sum("brain: compiling Agentloop mine.wasm" in err for err in stderr) == 1, stderr
    assert sum("waiting for another process compiling" in err for err in stderr) == 1, stderr
    assert not list(cache.glob("*.compiling")), "the claim was left behind"


def test_a_claim_left_by_a_dead_process_is_taken_over(tmp_path: Path, component: Path) -> None:
    from brain.agentloop.compile_cache import claim_path, sha256_of
    from brain.agentloop.components import artifact_name

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    dead = subprocess.Popen(["true"])  # a pid that has exited
    dead.wait(timeout=10)
    artifact = cache / artifact_name(sha256_of(component.read_bytes()))
    claim_path(artifact).write_text(str(dead.pid))
    done = brain(cache, "agentloop", "check", str(component))
    assert done.returncode == 0, done.stderr
    assert "waiting" not in done.stderr and "brain: compiled Agentloop mine.wasm" in done.stderr
    assert artifact.is_file() and not claim_path(artifact).exists()
