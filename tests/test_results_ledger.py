"""Benchmark results live in a ledger (docs/results/), not in the docs that describe Brain.

docs/benchmarks.md says how each benchmark runs and stays true between runs, so it names no
commit; docs/decisions.md records each decision as true today, with no before -> after
figures; every figure a run measured is a row of docs/results/<benchmark>.csv, which the
benchmarks append with `--record` (tools/bench/ledger.py).
"""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path

from tools.bench.ledger import add_record_flag, record

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
COMMIT = re.compile(r"`[0-9a-f]{7,40}`")
RECORDING = ("compare", "fleet", "turns", "burst", "sessions")


def test_a_record_appends_a_row_and_widens_the_header(tmp_path: Path) -> None:
    record("demo", {"rate": 12.345678, "skipped": float("nan")}, directory=tmp_path,
           commit="abc1234", when=0)
    path = record("demo", {"rate": 2.0, "p50_ms": 7}, directory=tmp_path, commit="abc1235",
                  when=86400)
    rows = list(csv.DictReader(path.open()))
    assert next(csv.reader(path.open())) == ["date", "commit", "rate", "skipped", "p50_ms"]
    assert rows == [
        {"date": "1970-01-01 00:00", "commit": "abc1234", "rate": "12.35", "skipped": "",
         "p50_ms": ""},
        {"date": "1970-01-02 00:00", "commit": "abc1235", "rate": "2", "skipped": "",
         "p50_ms": "7"},
    ]


def test_new_figures_go_before_the_note(tmp_path: Path) -> None:
    (tmp_path / "demo.csv").write_text("date,commit,rate,note\n,,1,by hand\n")
    path = record("demo", {"rate": 2, "p99_ms": 3}, directory=tmp_path, commit="c", when=0)
    assert path.read_text().splitlines() == ["date,commit,rate,p99_ms,note", ",,1,,by hand",
                                             "1970-01-01 00:00,c,2,3,"]


def test_the_record_flag() -> None:
    parser = argparse.ArgumentParser()
    add_record_flag(parser, "demo")
    assert parser.parse_args(["--record"]).record and not parser.parse_args([]).record


def test_every_ledger_is_a_benchmarks_and_well_formed() -> None:
    ledgers = sorted(RESULTS.glob("*.csv"))
    assert {p.stem for p in ledgers} >= set(RECORDING)
    for path in ledgers:
        assert (ROOT / "tools" / "bench" / f"{path.stem}.py").is_file(), path.name
        rows = list(csv.reader(path.open()))
        assert rows[0][:2] == ["date", "commit"], path.name
        assert all(len(row) == len(rows[0]) for row in rows), path.name


def test_the_main_benchmarks_take_record() -> None:
    for name in RECORDING:
        source = (ROOT / "tools" / "bench" / f"{name}.py").read_text()
        assert f'add_record_flag(parser, "{name}")' in source, name


def test_the_docs_hold_no_results_by_commit() -> None:
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text()
    assert COMMIT.findall(benchmarks) == []
    assert "## CPU budget of a turn" in benchmarks
    decisions = (ROOT / "docs" / "decisions.md").read_text()
    assert "→" not in decisions and "->" not in decisions
