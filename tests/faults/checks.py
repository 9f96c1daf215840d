"""What every fault test asserts of a data dir: journals that verify, one terminal per start.

These read the journal files directly (the canonical state), never through the server, so a
check holds whatever the server believes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from brain.journal import JournalScan

TERMINALS = {
    "turn_started": ("turn_ended", "turn_failed"),
    "activation_started": ("activation_ended", "activation_failed"),
    "model_call_started": ("model_call_ended", "model_call_failed"),
    "tool_call_started": ("tool_call_ended", "tool_call_failed"),
    "environment_op_started": ("environment_op_ended", "environment_op_failed"),
}
TERMINAL_KINDS = {kind for pair in TERMINALS.values() for kind in pair}


def journal(data_dir: Path, session_id: str) -> list[dict[str, Any]]:
    return [frame.record
            for frame in JournalScan(data_dir / "sessions" / session_id / "journal")]


def verify(data_dir: Path, session_id: str) -> str:
    """Run the operator's `brain journal verify`; return its complaint, or '' when clean."""
    done = subprocess.run([sys.executable, "-m", "brain.cli", "journal", "verify", session_id],
                          env={"BRAIN_DATA_DIR": str(data_dir), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    return "" if done.returncode == 0 else f"{session_id}: {done.stdout}{done.stderr}"


def unmatched_starts(records: list[dict[str, Any]], *, settled: bool = True) -> list[str]:
    """Each `*_started` without exactly one terminal naming it (`settled`: none may be open),
    and each terminal naming no start."""
    starts = {r["seq"]: r["kind"] for r in records if r["kind"] in TERMINALS}
    ends: dict[int, list[str]] = {}
    for record in records:
        if record["kind"] in TERMINAL_KINDS:
            ends.setdefault(record.get("started"), []).append(record["kind"])
    problems = []
    for seq, kind in starts.items():
        got = ends.pop(seq, [])
        if len(got) > 1 or (settled and not got) or any(k not in TERMINALS[kind] for k in got):
            problems.append(f"{kind} {seq} has terminals {got}")
    problems.extend(f"terminals {kinds} name no start {seq}" for seq, kinds in ends.items())
    return problems


def kinds(records: list[dict[str, Any]]) -> list[str]:
    return [r["kind"] for r in records]
