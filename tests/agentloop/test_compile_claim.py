"""The claim that lets one process of a machine compile an Agentloop while the others wait:
it is never seen empty, and a claimant that finds the artifact stored meanwhile does not
compile it again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from brain.agentloop import compile_cache
from brain.agentloop.compile_cache import claim_path, compile_once


def test_a_claim_is_whole_from_the_moment_it_exists(tmp_path: Path) -> None:
    artifact = tmp_path / "loop.bin"
    claim = compile_cache._claim(artifact)
    assert claim == claim_path(artifact)
    assert claim.read_text() == str(os.getpid())
    assert [p.name for p in tmp_path.iterdir()] == [claim.name]  # no private file left behind


def test_a_live_process_claim_is_waited_on_and_a_dead_one_taken_over(tmp_path: Path) -> None:
    artifact = tmp_path / "loop.bin"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        claim_path(artifact).write_text(str(sleeper.pid))
        assert compile_cache._claim(artifact) is None
    finally:
        sleeper.kill()
        sleeper.wait(timeout=10)
    assert compile_cache._claim(artifact) == claim_path(artifact)
    assert claim_path(artifact).read_text() == str(os.getpid())


def test_an_artifact_stored_between_the_load_and_the_claim_is_not_compiled_again(
        tmp_path: Path) -> None:
    artifact = tmp_path / "loop.bin"
    loads: list[Path] = []
    compiles: list[str] = []

    def load(path: Path) -> str | None:
        loads.append(path)
        return None if len(loads) == 1 else "stored by another process"

    def compile_and_store() -> str:
        compiles.append("compiled")
        return "compiled here"

    found, action, _ = compile_once("loop.wasm", 10, artifact, load, compile_and_store)
    assert (found, action, compiles) == ("stored by another process", "cached", [])
    assert not claim_path(artifact).exists()


def test_a_claim_falls_back_where_hard_links_are_refused(tmp_path: Path,
                                                          monkeypatch) -> None:
    def no_links(src: object, dst: object) -> None:
        raise PermissionError(1, "Operation not permitted")  # what vfat-like mounts say

    monkeypatch.setattr(compile_cache.os, "link", no_links)
    artifact = tmp_path / "loop.bin"
    assert compile_cache._claim(artifact) == claim_path(artifact)
    assert claim_path(artifact).read_text() == str(os.getpid())
    assert compile_cache._claim(artifact, take_over=False) is not None  # our own claim is stale
