"""docs/agentloop.md shows the example loop the tests build and run, not a stale copy."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_documented_example_matches_the_source() -> None:
    doc = (ROOT / "docs" / "agentloop.md").read_text()
    source = (ROOT / "agentloops" / "examples" / "turn_counter.c").read_text()
    body = source[source.index("#include") :]
    assert f"```c\n{body}```" in doc
