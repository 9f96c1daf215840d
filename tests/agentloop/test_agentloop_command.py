"""`brain agentloop check` and `brain agentloop build`, run as a user runs them (issue 29)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from brain.agentloop import DEFAULT_AGENTLOOP
from tests.support.python_guests import other_world_component, python_guest


def brain(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "brain.cli", "agentloop", *args],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.slow_e2e  # compiles a component: what it reads is Wasm, on any Python
def test_check_tells_the_two_kinds_apart_and_says_what_fits() -> None:
    core = brain("check", str(DEFAULT_AGENTLOOP))
    assert core.returncode == 0, core.stderr
    assert "a core module" in core.stdout and "fits the core-module ABI" in core.stdout
    component = brain("check", str(python_guest("turn_counter")))
    assert component.returncode == 0, component.stderr
    assert "a component" in component.stdout
    assert "fits the world brain:agentloop@1.0.0" in component.stdout


@pytest.mark.slow_e2e  # compiles a component: what it reads is Wasm, on any Python
def test_check_refuses_what_brain_cannot_run(tmp_path: Path) -> None:
    wrong = brain("check", str(other_world_component("old_version")))
    assert wrong.returncode == 1
    assert "built for another version of the Agentloop world" in wrong.stdout
    text = tmp_path / "notes.wasm"
    text.write_text("hello")
    junk = brain("check", str(text))
    assert junk.returncode == 1 and "not a WebAssembly binary" in junk.stdout


def test_build_refuses_a_file_that_is_not_a_python_module(tmp_path: Path) -> None:
    loop = tmp_path / "my-loop.py"
    loop.write_text("def activate(turn):\n    return 1\n")
    refused = brain("build", str(loop))
    assert refused.returncode == 1
    assert "must be a Python module name" in refused.stderr
    assert not (tmp_path / "my-loop.wasm").exists()
