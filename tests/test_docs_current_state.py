"""Brain's docs describe Brain as it is, not the story of how it got there.

docs/benchmarks.md says how each benchmark runs and docs/decisions.md holds the standing
decisions; what runs measured is rows of docs/results/ (tests/test_results_ledger.py), and
history lives in git. So each stays short enough to read whole, and no page under docs/
narrates work passes or sessions ("in this pass", "since then"). The phrases are matched whole
and without regard to case; each is one that only a log of successive work would write.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
MAX_LINES = 400
SHORT_PAGES = ("benchmarks.md", "decisions.md")
NARRATION = ("earlier we", "this pass", "speed pass", "in a later pass", "end of the pass",
             "previous session", "speed session", "since then", "we first tried",
             "was changed to")
NARRATED = re.compile(r"\b(?:" + "|".join(re.escape(p) for p in NARRATION) + r")\b",
                      re.IGNORECASE)


def narration(text: str) -> list[str]:
    return [m.group(0) for m in NARRATED.finditer(text)]


def test_benchmarks_and_decisions_are_short() -> None:
    lines = {name: len((DOCS / name).read_text().splitlines()) for name in SHORT_PAGES}
    assert {name: n for name, n in lines.items() if n > MAX_LINES} == {}


def test_no_page_narrates_how_brain_got_here() -> None:
    pages = sorted(DOCS.glob("*.md"))
    assert len(pages) > 10  # the glob really read docs/
    found = {page.name: hits for page in pages if (hits := narration(page.read_text()))}
    assert found == {}


def test_the_check_catches_narration() -> None:
    text = ("At the end of the pass, the fourth speed pass, Since then the turn is faster.\n"
            "A round trip, a first passing test and a session token are fine.\n")
    assert narration(text) == ["end of the pass", "speed pass", "Since then"]


FIT_TABLE_COUNT = re.compile(r"the\s+fit\s+table\s+\(`brain/actors/thespian/fit\.py`\)\s+has\s+"
                             r"(\d+)\s+entries")
"""How docs/architecture.md and docs/thespian-patches.md give the number of entries of the fit
table (PATCHES in brain/actors/thespian/fit.py), the places where Brain touches Thespian."""


@pytest.mark.parametrize("page", ["architecture.md", "thespian-patches.md"])
def test_the_count_of_thespian_patches_is_the_fit_tables(page: str) -> None:
    from brain.actors.thespian.fit import PATCHES

    counts = [int(n) for n in FIT_TABLE_COUNT.findall((DOCS / page).read_text())]
    assert counts == [len(PATCHES)]


def test_the_patches_page_lists_every_entry_of_the_fit_table() -> None:
    from brain.actors.thespian.fit import PATCH_MODULES, PATCHES

    text = (DOCS / "thespian-patches.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)\.py` \|", text, re.MULTILINE)
    assert dict(rows) == PATCH_MODULES and len(rows) == len(PATCHES)
