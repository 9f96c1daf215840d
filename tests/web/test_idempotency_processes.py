"""The idempotency store across real processes: SIGKILL after a claim, and racing workers."""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import selectors
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from brain import errors
from brain.procstat import read_stat
from brain.web.idempotency import FILENAME, IdempotencyStore, Outcome, fingerprint

BOOT = "boot-one"
FP = fingerprint("POST", "/v1/sessions/s1/messages", b'{"input": "hi"}')
WAIT_SECS = 30
RACE_ROUNDS = 200

# Claims one key in a fresh process, then: "hold" reports and sleeps until killed; "die" SIGKILLs
# itself the instant `claim` returns; "answer" completes, then SIGKILLs itself.
CHILD = """
import os, signal, sys, time
from pathlib import Path
from brain.web.idempotency import IdempotencyStore

path, boot_id, key, fp, mode = sys.argv[1:6]
store = IdempotencyStore(Path(path), boot_id=boot_id)
claim = store.claim("operator", "send", "s1", key, fp)
if mode == "die":
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "answer":
    store.complete(claim, 200, [("Content-Type", "text/plain")], b"answered")
    os.kill(os.getpid(), signal.SIGKILL)
print(claim.outcome.value, flush=True)
time.sleep(120)
"""


@contextmanager
def child(db: Path, key: str, mode: str, boot_id: str = BOOT) -> Iterator[subprocess.Popen[str]]:
    """A claiming subprocess that is always killed and reaped, whatever the test does."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), boot_id, key, FP, mode],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=WAIT_SECS)
        assert proc.stdout is not None
        proc.stdout.close()


def read_line(proc: subprocess.Popen[str], timeout: float = WAIT_SECS) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise TimeoutError("the child did not report its claim in time")
    return proc.stdout.readline().strip()


def wait_until(predicate: object, timeout: float = WAIT_SECS) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached in time")
        time.sleep(0.005)


def proc_state(pid: int) -> str:
    return read_stat(pid).state


def raw_rows(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT key, boot_id, status FROM claims ORDER BY key").fetchall()
    finally:
        conn.close()


# -- a worker that dies ------------------------------------------------------------------------


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_claim_of_a_sigkilled_worker_turns_from_in_progress_to_ambiguous(tmp_path: Path) -> None:
    db = tmp_path / FILENAME
    store = IdempotencyStore(db, boot_id=BOOT)
    with child(db, "held", "hold") as proc:
        assert read_line(proc) == "new"
        with pytest.raises(errors.RequestInProgress):
            store.claim("operator", "send", "s1", "held", FP)
        proc.send_signal(signal.SIGKILL)
        wait_until(lambda: proc_state(proc.pid) == "Z")  # dead but not yet reaped
        with pytest.raises(errors.IdempotencyAmbiguous):
            store.claim("operator", "send", "s1", "held", FP)
        proc.wait(timeout=WAIT_SECS)
    with pytest.raises(errors.IdempotencyAmbiguous):
        store.claim("operator", "send", "s1", "held", FP)
    with pytest.raises(errors.IdempotencyAmbiguous):  # and after the restart of the server
        IdempotencyStore(db, boot_id="boot-two").claim("operator", "send", "s1", "held", FP)


# -- durability --------------------------------------------------------------------------------


def test_claim_is_durable_when_claim_returns(tmp_path: Path) -> None:
    db = tmp_path / FILENAME
    with child(db, "durable", "die") as proc:
        assert proc.wait(timeout=WAIT_SECS) == -signal.SIGKILL
    assert raw_rows(db) == [("durable", BOOT, None)]
    reopened = IdempotencyStore(db, boot_id="boot-two")
    with pytest.raises(errors.IdempotencyAmbiguous):
        reopened.claim("operator", "send", "s1", "durable", FP)


def test_answer_is_durable_when_complete_returns(tmp_path: Path) -> None:
    db = tmp_path / FILENAME
    with child(db, "answered", "answer") as proc:
        assert proc.wait(timeout=WAIT_SECS) == -signal.SIGKILL
    replay = IdempotencyStore(db, boot_id="boot-two").claim(
        "operator", "send", "s1", "answered", FP
    )
    assert replay.outcome is Outcome.REPLAY and replay.answer is not None
    assert replay.answer.body == b"answered"


# -- two workers race --------------------------------------------------------------------------


def _racer(db: str, barrier: object, results: object) -> None:
    """One worker: claim the same key as the other worker at the same instant, round after round."""
    store = IdempotencyStore(Path(db), boot_id=BOOT)
    store.claim("operator", "send", "s1", f"warm-{os.getpid()}", FP)  # open before racing
    outcomes = []
    for round_ in range(RACE_ROUNDS):
        barrier.wait(timeout=WAIT_SECS)  # type: ignore[attr-defined]
        try:
            claim = store.claim("operator", "send", "s1", f"race-{round_}", FP)
        except errors.RequestInProgress:
            outcomes.append("in_progress")
            continue
        outcomes.append(claim.outcome.value)
        if claim.outcome is Outcome.NEW:
            store.complete(claim, 200, [], str(os.getpid()).encode())
    results.put(outcomes)  # type: ignore[attr-defined]


def collect(results: object, racers: list, count: int, timeout: float) -> list:
    """Gather the racers' reports, failing fast if one of them died instead."""
    reports: list = []
    deadline = time.monotonic() + timeout
    while len(reports) < count:
        try:
            reports.append(results.get(timeout=0.2))  # type: ignore[attr-defined]
        except queue.Empty:
            if any(racer.exitcode not in (None, 0) for racer in racers):
                pytest.fail(f"a racer died: {[racer.exitcode for racer in racers]}")
            if time.monotonic() > deadline:
                pytest.fail("the racers did not finish in time")
    return reports


def test_two_processes_racing_for_a_key_one_wins_every_time(tmp_path: Path) -> None:
    db = tmp_path / FILENAME
    IdempotencyStore(db, boot_id=BOOT).close()  # create the file before the race
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results = context.Queue()
    racers = [context.Process(target=_racer, args=(str(db), barrier, results)) for _ in "ab"]
    for racer in racers:
        racer.start()
    try:
        first, second = collect(results, racers, count=2, timeout=120)
        for racer in racers:
            racer.join(timeout=WAIT_SECS)
    finally:
        for racer in racers:
            if racer.is_alive():
                racer.kill()
                racer.join(timeout=10)
    assert [racer.exitcode for racer in racers] == [0, 0]
    for round_, pair in enumerate(zip(first, second, strict=True)):
        assert sorted(pair).count("new") == 1, (round_, pair)
        assert set(pair) <= {"new", "replay", "in_progress"}
    race_rows = [row for row in raw_rows(db) if row[0].startswith("race-")]
    assert len(race_rows) == RACE_ROUNDS and all(row[2] == 200 for row in race_rows)


# -- gevent ------------------------------------------------------------------------------------

# Builds the store before patching (as a preloaded app would), then lets greenlets share it.
GEVENT_CHILD = """
import json, sys
from pathlib import Path
from brain import errors
from brain.web.idempotency import IdempotencyStore, Outcome, fingerprint

store = IdempotencyStore(Path(sys.argv[1]), boot_id="boot-one")
from gevent import monkey
monkey.patch_all()
import gevent

fp = fingerprint("POST", "/v1/sessions/s1/messages", b"{}")
shared = []

def same_key():
    try:
        claim = store.claim("operator", "send", "s1", "shared", fp)
    except errors.RequestInProgress:
        shared.append("in_progress")
        return
    shared.append(claim.outcome.value)
    gevent.sleep(0.05)  # the work: every other greenlet claims meanwhile
    store.complete(claim, 200, [], b"done")

def own_key(n):
    claim = store.claim("operator", "send", "s1", f"own-{n}", fp)
    gevent.sleep(0)
    store.complete(claim, 200, [], b"own")

jobs = [gevent.spawn(same_key) for _ in range(20)] + [gevent.spawn(own_key, n) for n in range(50)]
gevent.joinall(jobs, timeout=30, raise_error=True)
assert all(job.successful() for job in jobs)
replay = store.claim("operator", "send", "s1", "shared", fp).outcome.value
print(json.dumps({"shared": sorted(shared), "replay": replay}))
"""


def test_greenlets_of_one_gevent_worker_share_the_store(tmp_path: Path) -> None:
    pytest.importorskip("gevent")
    done = subprocess.run(
        [sys.executable, "-c", GEVENT_CHILD, str(tmp_path / FILENAME)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report == {"shared": ["in_progress"] * 19 + ["new"], "replay": "replay"}
    assert len(raw_rows(tmp_path / FILENAME)) == 51
