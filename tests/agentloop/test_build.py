"""The committed default.wasm is exactly what tools/build_agentloops.sh builds from source.

The module ships as package data so users need no toolchain; this test keeps it honest. It is
skipped only when clang or wasm-ld is missing (CI installs both).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from brain.agentloop import DEFAULT_AGENTLOOP

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "build_agentloops.sh"


@pytest.mark.skipif(
    shutil.which("clang") is None or shutil.which("wasm-ld") is None,
    reason="clang and wasm-ld (Debian packages clang, lld) are needed to rebuild default.wasm",
)
def test_default_wasm_is_reproducible(tmp_path: Path) -> None:
    for out in (tmp_path / "one", tmp_path / "two"):
        subprocess.run(["sh", str(SCRIPT), str(out)], check=True, timeout=120,
                       capture_output=True)
    built = (tmp_path / "one" / "default.wasm").read_bytes()
    assert built == (tmp_path / "two" / "default.wasm").read_bytes(), "the build is not stable"
    version = subprocess.run(["clang", "--version"], capture_output=True, text=True,
                             timeout=30).stdout.splitlines()[0]
    assert built == DEFAULT_AGENTLOOP.read_bytes(), (
        f"brain/agentloop/default.wasm differs from a fresh build with {version}: run "
        "tools/build_agentloops.sh and commit the result"
    )
