"""Brain's docs and docstrings stand alone: every file they name is in the repository.

A reader sent to a page or a module that does not exist is stranded. This reads README.md,
docs/ and every Python, C and WAT source, collects each `*.md` name and each path into the
repository's own folders, and checks that it resolves.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKDOWN_NAME = re.compile(r"(?<![\w/.-])([\w./-]*[\w-]+\.md)\b")
REPO_PATH = re.compile(
    r"(?<![\w/.-])((?:brain|tools|conf|agentloops|tests|docs)/[\w/.-]*\w"
    r"\.(?:py|sh|toml|c|h|wasm|wat|md))\b")
SOURCES = ("*.md", "*.py", "*.c", "*.h", "*.wat", "*.toml", "*.cfg", "*.sh")


# `agentloops/examples/NAME.wasm` names a pattern, not a file.
PLACEHOLDER = re.compile(r"\b(?:NAME|ID|SESSION_ID|N)\b")


def tracked_texts() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", *SOURCES], cwd=ROOT, capture_output=True,
                            text=True, check=True, timeout=30).stdout.split()
    this_test = Path(__file__).resolve()  # its own examples name missing files on purpose
    return [ROOT / name for name in listed
            if (ROOT / name).is_file() and (ROOT / name).resolve() != this_test]


def resolves(name: str, cited_from: Path) -> bool:
    candidates = (ROOT / name, cited_from.parent / name, ROOT / "docs" / name)
    return any(candidate.is_file() for candidate in candidates)


def dangling_names(path: Path) -> list[str]:
    text = path.read_text(errors="replace")
    names = {m.group(1) for m in MARKDOWN_NAME.finditer(text)}
    names |= {m.group(1) for m in REPO_PATH.finditer(text)}
    return sorted(name for name in names
                  if not PLACEHOLDER.search(name) and not resolves(name, path))


def test_every_named_file_exists() -> None:
    files = tracked_texts()
    assert len(files) > 50  # the walk really read the repository
    dangling = {str(p.relative_to(ROOT)): names for p in files if (names := dangling_names(p))}
    assert dangling == {}


def test_the_check_catches_a_missing_page(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("See sessions.md and brain/journal/nowhere.py, and docs/concepts.md.\n")
    assert dangling_names(page) == ["brain/journal/nowhere.py", "sessions.md"]
