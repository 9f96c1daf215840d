"""The example Agentloops as committed (real Wasm built from agentloops/examples/*.c).

Tests run the committed modules, so the suite needs no C toolchain. They are rebuilt with
tools/build_agentloops.sh; tests/agentloop/test_build.py checks that they are what their
sources build.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "agentloops" / "examples"


def example_guest(name: str) -> Path:
    """agentloops/examples/{name}.wasm, the committed build of {name}.c."""
    path = EXAMPLES / f"{name}.wasm"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run tools/build_agentloops.sh (needs clang and lld) and commit it"
        )
    return path
