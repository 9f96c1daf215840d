"""A reader in another process than the writer sees only whole batches and never damage."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from brain.journal import SessionReader

REPO = Path(__file__).resolve().parents[2]


def test_reader_beside_a_writer_process_sees_only_whole_batches(tmp_path: Path) -> None:
    session = tmp_path / "s"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.journal.concurrent_child", str(session / "journal"), "3"],
        stdout=subprocess.PIPE, cwd=REPO, env=env, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "ready"
        reader = SessionReader(session)
        reads = 0
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            projection = reader.projection()
            last = projection.kv.get("last")
            if last is not None:
                assert last["i"] == last["n"] - 1, "a reader saw part of a batch"
            page = reader.events_page(max(0, projection.last_seq - 40), 1000)
            if page["events"] and not page["has_more"] and page["events"][-1]["kind"] == "tick":
                tail = page["events"][-1]["data"]
                assert tail["i"] == tail["n"] - 1, "a page ended inside a batch"
            assert reader.status()["status"] == "idle"
            reads += 1
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert reads > 5
    events = list(SessionReader(session).events_after(0))
    assert events[0]["kind"] == "session_created"
    assert [e["sequence"] for e in events[1:]] == list(range(2, 2 * len(events), 2))
