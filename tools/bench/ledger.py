"""The results ledger: `--record` appends a run's figures to docs/results/<benchmark>.csv.

docs/benchmarks.md says how each benchmark runs and what it measures, and stays true between
runs; the figures a run measured are dated facts about one commit, so they go to a ledger, one
CSV per benchmark, one row per run (or per workload of a run), appended by the benchmark
itself. Today's figure is the last row; the history is the file's and git's.

A row is `date` (UTC), `commit` (the short hash of HEAD, `+dirty` when tracked files differ from
it) and the figures, named by the benchmark. A figure the file has no column for yet widens the
header; rows written before it leave that column empty.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
FIRST = ("date", "commit")
NOTE = "note"  # a hand-written row's words, kept the last column


def add_record_flag(parser: argparse.ArgumentParser, benchmark: str) -> None:
    """Give a benchmark's command line the `--record` flag."""
    parser.add_argument("--record", action="store_true",
                        help=f"append this run's figures to docs/results/{benchmark}.csv")


def current_commit(repo: Path = ROOT) -> str:
    """HEAD's short hash, `+dirty` when a tracked file differs; `unknown` outside a checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()
    try:
        commit = git("rev-parse", "--short=10", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def cell(value: Any) -> str:
    """A figure as the ledger writes it: floats to four significant digits, NaN empty."""
    if isinstance(value, float):
        return "" if value != value else f"{value:.4g}"
    return "" if value is None else str(value)


def record(benchmark: str, figures: Mapping[str, Any], *, directory: Path = RESULTS,
           commit: str | None = None, when: float | None = None) -> Path:
    """Append one row of `figures` to `directory/<benchmark>.csv`; the file's path."""
    row = {"date": time.strftime("%Y-%m-%d %H:%M", time.gmtime(when)),
           "commit": commit or current_commit(),
           **{name: cell(value) for name, value in figures.items()}}
    path = directory / f"{benchmark}.csv"
    rows: list[dict[str, str]] = []
    header = list(FIRST)
    if path.exists():
        with path.open(newline="") as existing:
            reader = csv.DictReader(existing)
            header = list(reader.fieldnames or FIRST)
            rows = list(reader)
    widened = [name for name in row if name not in header]
    at = header.index(NOTE) if NOTE in header else len(header)
    header[at:at] = widened  # words stay last
    directory.mkdir(parents=True, exist_ok=True)
    if widened or not path.exists():  # rewrite under the wider header
        with path.open("w", newline="") as out:
            writer = csv.DictWriter(out, header, restval="")
            writer.writeheader()
            writer.writerows(rows)
    with path.open("a", newline="") as out:
        csv.DictWriter(out, header, restval="").writerow(row)
    return path


def recorded(benchmark: str, figures: Mapping[str, Any], wanted: bool) -> None:
    """`record` when `--record` was given, saying where the row went."""
    if wanted:
        path = record(benchmark, figures)
        print(f"recorded in {path.relative_to(ROOT)}", file=sys.stderr, flush=True)
