"""SIGKILL a real writer process mid-append, again and again: every acknowledged record must
survive, every surviving batch must be whole, and recovery must never refuse the journal."""

from __future__ import annotations

import os
import random
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brain.journal import JournalWriter
from brain.journal.scan import JournalScan
from brain.journal.segments import Cursor
from tests.journal.crash_child import blob

REPO = Path(__file__).resolve().parents[2]
WAIT = 20.0  # seconds: no single read of the child's pipe may take longer


def read_lines(proc: subprocess.Popen, until: float, stop_at_open: bool) -> list[str]:
    """Lines from the child's stdout until `until` (monotonic) or EOF; every wait is bounded."""
    lines: list[str] = []
    buffer = b""
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    try:
        while True:
            remaining = until - time.monotonic()
            if remaining <= 0:
                break
            if not selector.select(timeout=remaining):
                break
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            lines += [line.decode() for line in complete]
            if stop_at_open and any(line.startswith("open ") for line in lines):
                break
    finally:
        selector.close()
    return lines


def check_new_records(
    journal_dir: Path, start: Cursor | None, acknowledged: int
) -> tuple[int, Cursor | None, tuple[Path, int] | None]:
    """Check records after `start`: contents intact and every batch whole. Also returns where
    the acknowledged prefix ends (segment path, offset)."""
    scan = JournalScan(journal_dir, start)
    acked_end = None
    for frame in scan:
        value = frame.record["value"]
        assert frame.seq == value["first"] + value["i"]
        assert value["blob"] == blob(frame.seq, value["size"])
        if frame.header.end_of_batch:
            assert value["i"] == value["n"] - 1, f"batch at {value['first']} is not whole"
        if frame.seq == acknowledged:
            acked_end = (journal_dir / f"{frame.segment:020d}.seg", frame.end)
    return scan.last_seq, scan.end, acked_end


def lose_unsynced_tail(acked_end: tuple[Path, int] | None, rng: random.Random) -> None:
    """Simulate a power cut: bytes after the acknowledged prefix may or may not have reached
    the disk, so cut the last segment at a random offset after it."""
    if acked_end is None:
        return
    path, offset = acked_end
    if sorted(path.parent.glob("*.seg"))[-1] != path:
        return
    size = path.stat().st_size
    if size > offset:
        os.truncate(path, rng.randint(offset, size - 1))


def torn_tail(journal_dir: Path, cursor: Cursor | None) -> bool:
    scan = JournalScan(journal_dir, cursor)
    for _frame in scan:
        pass
    return scan.torn is not None


def crash_loop(tmp_path: Path, iterations: int, seed: int) -> None:
    rng = random.Random(seed)
    journal_dir = tmp_path / "s" / "journal"
    acknowledged = 0
    cursor = None
    kills_mid_write = cuts = 0
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for iteration in range(iterations):
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.journal.crash_child", str(journal_dir),
             str(rng.getrandbits(32)), str(rng.choice([64 << 10, 1 << 20]))],
            stdout=subprocess.PIPE, cwd=REPO, env=env,
        )  # fmt: skip
        try:
            lines = read_lines(proc, time.monotonic() + WAIT, stop_at_open=True)
            opened = [line for line in lines if line.startswith("open ")]
            assert opened, f"iteration {iteration}: the writer did not open: {lines}"
            recovered = int(opened[0].split()[1])
            assert recovered >= acknowledged  # nothing acknowledged was lost
            acknowledged = recovered  # open made the recovered journal durable
            lines += read_lines(proc, time.monotonic() + rng.uniform(0.0, 0.04), False)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=WAIT)
        lines += read_lines(proc, time.monotonic() + WAIT, False)  # what it printed before dying
        proc.stdout.close()
        acks = [int(line) for line in lines if line and not line.startswith("open ")]
        if acks:
            assert acks == sorted(acks)
            acknowledged = max(acknowledged, acks[-1])
        start = cursor
        last, cursor, acked_end = check_new_records(journal_dir, start, acknowledged)
        assert last >= acknowledged, f"iteration {iteration}: acknowledged {acknowledged}"
        kills_mid_write += torn_tail(journal_dir, cursor)
        if rng.random() < 0.3:
            lose_unsynced_tail(acked_end, rng)
            cuts += 1
            cursor = start
    writer = JournalWriter.open(journal_dir, checkpoint_path=None)
    assert writer.last_seq >= acknowledged
    writer.close()
    last, _, _ = check_new_records(journal_dir, None, acknowledged)
    assert last >= acknowledged > 0
    print(
        f"{iterations} kills, {acknowledged} acknowledged records, "
        f"{kills_mid_write} left a torn tail, {cuts} unsynced tails cut"
    )


def test_sigkill_mid_append_loses_nothing_acknowledged(tmp_path: Path) -> None:
    crash_loop(tmp_path, iterations=100, seed=20261202)


@pytest.mark.torture
def test_sigkill_torture(tmp_path: Path) -> None:
    crash_loop(tmp_path, iterations=1000, seed=int(time.time()))
