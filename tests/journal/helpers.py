"""Record factories and journal helpers shared by the journal tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from brain.journal import JournalWriter
from brain.journal.scan import JournalScan

CONFIG = {
    "agentloop": {"name": "default", "path": "/x/default.wasm"},
    "model": {"name": "scripted"},
    "tools": [{"name": "echo", "route": "builtin"}],
    "environments": [],
    "idle_ttl_ms": None,
    "metadata": {},
}


def created(environments: list[str] | None = None, seeded: int = 0) -> dict[str, Any]:
    config = dict(CONFIG, environments=[{"name": n} for n in environments or []])
    return {"kind": "session_created", "config": config, "seeded": seeded}


def message(text: str, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def delta(start: int, items: list[Any]) -> dict[str, Any]:
    return {
        "kind": "transcript_changed",
        "start": start,
        "items": items,
        "length": start + len(items),
    }


class Clock:
    """A deterministic millisecond clock for writers under test."""

    def __init__(self, start: int = 1_796_217_600_000) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 7
        return self.now


def open_writer(session_dir: Path, **kwargs: Any) -> JournalWriter:
    kwargs.setdefault("clock", Clock())
    return JournalWriter.open(session_dir / "journal", **kwargs)


def segments(session_dir: Path) -> list[Path]:
    return sorted((session_dir / "journal").glob("*.seg"))


def without_room(session_dir: Path) -> None:
    """Cut the zeros a writer keeps after the last segment's frames, leaving the journal as a
    roll leaves a segment: its frames and nothing after (tests that damage or tear the end of
    a journal start from there)."""
    scan = JournalScan(session_dir / "journal", decode=False)
    for _frame in scan:
        pass
    if scan.unused:
        last = segments(session_dir)[-1]
        os.truncate(last, last.stat().st_size - scan.unused)
