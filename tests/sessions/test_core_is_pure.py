"""brain/sessions/ decides, it does not read: no module of it touches the disk, an actor or the
web tier. What it decides from a journal (a start's recoveries, a delete's teardowns, a fork) is
read by brain/journal/ and passed in. Checked on the sources with `ast`, so a lazy import inside
a function counts as much as one at the top."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import brain.journal
import brain.sessions

SESSIONS = Path(brain.sessions.__file__).parent
MODULES = sorted(SESSIONS.glob("*.py"))

BANNED_PACKAGES = ("brain.actors", "brain.web")
DISK_MODULES = ("os", "pathlib", "io", "shutil", "glob", "tempfile", "mmap", "fcntl", "sqlite3")
JOURNAL_READS = ("checkpoint", "cli", "fault_hook", "history", "opening", "projection_at",
                 "reader", "scan", "segments", "statuses", "synced_mark", "timeline", "writer")
"""The modules of brain/journal/ that open a journal's files: the reads stay there."""
READS = {f"brain.journal.{name}" for name in JOURNAL_READS}

def banned_import(module: str) -> str | None:
    """Why importing `module` from brain/sessions/ is refused, or None."""
    if module.split(".")[0] in DISK_MODULES:
        return "reads the disk"
    if any(module == pkg or module.startswith(pkg + ".") for pkg in BANNED_PACKAGES):
        return "is outside the pure core"
    if module in READS:
        return "opens a journal"
    return None


def defined_in(module: str, name: str) -> str:
    """The module that defines `name` as imported from `module` (brain.journal re-exports)."""
    value = getattr(importlib.import_module(module), name, None)
    if value is None:
        return f"{module}.{name}"  # a submodule
    return getattr(value, "__module__", None) or module


def refusals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        imported: list[str] = []
        if isinstance(node, ast.Import):
            imported = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported = [node.module]
            if node.module == "brain.journal" or node.module.startswith("brain.journal."):
                imported += [defined_in(node.module, alias.name) for alias in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("open", "__import__")):
            found.append(f"line {node.lineno}: calls {node.func.id}()")
        for module in dict.fromkeys(imported):  # each module once per import
            why = banned_import(module)
            if why:
                found.append(f"line {node.lineno}: imports {module}, which {why}")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_no_module_of_the_session_core_reads_the_disk(path: Path) -> None:
    assert refusals(path) == []


def test_the_check_sees_what_it_refuses(tmp_path: Path) -> None:
    module = tmp_path / "reads.py"
    module.write_text(
        "import os\n"
        "from pathlib import Path\n"
        "from brain.journal import SessionReader, fold\n"
        "def read(p):\n"
        "    from brain.actors.system.boot import main\n"
        "    from brain.web.app import create_app\n"
        "    from brain.journal.projection_at import projection_at\n"
        "    return open(p).read()\n")
    assert [line.split(": ", 1)[1] for line in refusals(module)] == [
        "imports os, which reads the disk",
        "imports pathlib, which reads the disk",
        "imports brain.journal.reader, which opens a journal",
        "imports brain.actors.system.boot, which is outside the pure core",
        "imports brain.web.app, which is outside the pure core",
        "imports brain.journal.projection_at, which opens a journal",
        "calls open()",
    ]


def test_every_journal_read_named_is_a_module_of_the_journal() -> None:
    journal = Path(brain.journal.__file__).parent
    assert {path.stem for path in journal.glob("*.py")} >= set(JOURNAL_READS)
