"""Build the example Agentloops (real Wasm, from agentloops/examples/) for end-to-end tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def build_examples(out_dir: Path) -> Path:
    """Run tools/build_agentloops.sh with BUILD_EXAMPLES=1; returns the examples folder."""
    if shutil.which("clang") is None or shutil.which("wasm-ld") is None:
        pytest.fail("clang and lld are required (.ci/run installs them)")
    subprocess.run(["sh", str(ROOT / "tools" / "build_agentloops.sh"), str(out_dir)],
                   check=True, env={**os.environ, "BUILD_EXAMPLES": "1"}, timeout=120,
                   capture_output=True)
    return out_dir / "examples"
