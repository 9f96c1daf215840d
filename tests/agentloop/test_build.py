"""The committed default.wasm is exactly what tools/build_agentloops.sh builds from source,
and the documented example loop builds and runs.

default.wasm ships as package data so users need no toolchain; this test keeps it honest.
Skipped only when clang or wasm-ld is missing (CI installs both).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from brain.agentloop import DEFAULT_AGENTLOOP, AgentloopRuntime
from tests.agentloop.helpers import FakeBrain, assistant, payload, text

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "build_agentloops.sh"

pytestmark = pytest.mark.skipif(
    shutil.which("clang") is None or shutil.which("wasm-ld") is None,
    reason="clang and wasm-ld (Debian packages clang, lld) are needed to build Agentloops",
)


def build(out: Path) -> None:
    env = {**os.environ, "BUILD_EXAMPLES": "1"}
    subprocess.run(
        ["sh", str(SCRIPT), str(out)], check=True, timeout=120, capture_output=True, env=env
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("agentloops")
    build(out)
    return out


def test_default_wasm_is_reproducible(built: Path, tmp_path: Path) -> None:
    build(tmp_path)
    fresh = (built / "default.wasm").read_bytes()
    assert fresh == (tmp_path / "default.wasm").read_bytes(), "the build is not stable"
    version = subprocess.run(
        ["clang", "--version"], capture_output=True, text=True, timeout=30
    ).stdout.splitlines()[0]
    assert fresh == DEFAULT_AGENTLOOP.read_bytes(), (
        f"brain/agentloop/default.wasm differs from a fresh build with {version}: run "
        "tools/build_agentloops.sh and commit the result"
    )


def test_documented_example_loop(built: Path) -> None:
    loop = built / "examples" / "turn_counter.wasm"
    runtime = AgentloopRuntime()
    brain = FakeBrain(replies=[assistant(text("Bonjour")), assistant(text('Encore "é"'))])
    first = runtime.activate(loop, payload("hello"), brain, time.monotonic() + 10)
    second = runtime.activate(loop, payload("again"), brain, time.monotonic() + 10)
    assert first == {"status": "completed", "output": "#1: Bonjour"}
    assert second == {"status": "completed", "output": '#2: Encore "é"'}
    assert brain.kv == {"turns": 2}
    assert brain.requests[2] == {
        "op": "model.call",
        "tools": [],
        "messages": [{"role": "user", "content": [text("hello")]}],
    }
