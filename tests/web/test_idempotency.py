"""The idempotency store within one process: answers, conflicts, scopes, keys and expiry.

Crashes, restarts of real processes and cross-process races are in test_idempotency_processes.py.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from brain import errors
from brain.web import idempotency
from brain.web.idempotency import (
    FILENAME,
    Claim,
    IdempotencyStore,
    Outcome,
    fingerprint,
    new_boot_id,
    validate_key,
)
from tests.support.forking import FORK_WITH_THREADS

BOOT = "boot-one"
PATH = "/v1/sessions/s1/messages"
FP = fingerprint("POST", PATH, b'{"input": "hi"}')
OTHER_FP = fingerprint("POST", PATH, b'{"input": "bye"}')


class Clock:
    """A settable clock, so expiry is tested without waiting a day."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def open_store(tmp_path: Path, boot_id: str = BOOT, **kwargs: object) -> IdempotencyStore:
    return IdempotencyStore(tmp_path / FILENAME, boot_id=boot_id, **kwargs)  # type: ignore[arg-type]


def claim_send(store: IdempotencyStore, key: str = "key-1", fp: str = FP) -> Claim:
    return store.claim("operator", "send", "s1", key, fp)


# -- answers -----------------------------------------------------------------------------------


def test_new_then_replay_byte_for_byte(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    first = claim_send(store)
    assert first.outcome is Outcome.NEW and first.answer is None
    body = bytes(range(256)) + b'{"z": 1,  "a": "\xc3\xa9"}\r\n'
    headers = [
        ("Content-Type", "application/json; charset=utf-8"),
        ("Location", "/v1/sessions/s1"),
        ("x-Odd-Case", "  kept as sent  "),
        ("Link", "<a>"),
        ("Link", "<b>"),
    ]
    store.complete(first, 202, headers, body)

    for reader in (store, open_store(tmp_path), open_store(tmp_path, boot_id="boot-two")):
        again = claim_send(reader)
        assert again.outcome is Outcome.REPLAY
        assert again.answer is not None
        assert again.answer.status == 202
        assert again.answer.headers == headers
        assert again.answer.body == body
        assert type(again.answer.body) is bytes


def test_empty_body_and_no_headers_replay(tmp_path: Path) -> None:
    store = IdempotencyStore(tmp_path / FILENAME, boot_id=BOOT)
    claim = store.claim(
        "operator", "delete", "s1", "k", fingerprint("DELETE", "/v1/sessions/s1", b"")
    )
    store.complete(claim, 204, [], b"")
    again = store.claim(
        "operator", "delete", "s1", "k", fingerprint("DELETE", "/v1/sessions/s1", b"")
    )
    assert again.answer == idempotency.Answer(204, [], b"")


def test_complete_twice_or_a_replay_is_refused(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    claim = claim_send(store)
    store.complete(claim, 200, [], b"one")
    with pytest.raises(ValueError):
        store.complete(claim, 200, [], b"two")
    replay = claim_send(store)
    with pytest.raises(ValueError):
        store.complete(replay, 200, [], b"three")
    with pytest.raises(ValueError):
        store.abandon(replay)
    assert claim_send(store).answer.body == b"one"  # type: ignore[union-attr]


def test_pragmas_are_durable(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    claim_send(store)
    conn = store._connection()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 0  # waited for cooperatively


# -- conflicts, in progress, ambiguous ---------------------------------------------------------


def test_same_key_other_body_conflicts_in_every_state(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    claim = claim_send(store)
    with pytest.raises(errors.IdempotencyConflict) as running:
        claim_send(store, fp=OTHER_FP)
    assert running.value.code == "idempotency_conflict" and running.value.status == 409
    store.complete(claim, 200, [], b"done")
    with pytest.raises(errors.IdempotencyConflict):
        claim_send(store, fp=OTHER_FP)
    claim_send(store, key="key-2")
    with pytest.raises(errors.IdempotencyConflict):
        claim_send(open_store(tmp_path, boot_id="boot-two"), key="key-2", fp=OTHER_FP)


def test_same_key_while_running_is_in_progress(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    claim = claim_send(store)
    for reader in (store, open_store(tmp_path)):
        with pytest.raises(errors.RequestInProgress) as caught:
            claim_send(reader)
        assert caught.value.code == "request_in_progress" and caught.value.status == 409
    store.complete(claim, 200, [], b"done")
    assert claim_send(store).outcome is Outcome.REPLAY


def test_unanswered_claim_of_an_older_boot_is_ambiguous_forever(tmp_path: Path) -> None:
    claim_send(open_store(tmp_path, boot_id="before-restart"))
    after = open_store(tmp_path, boot_id="after-restart")
    for _ in range(3):  # never turns into NEW: the request is never executed again
        with pytest.raises(errors.IdempotencyAmbiguous) as caught:
            claim_send(after)
        assert caught.value.code == "idempotency_ambiguous" and caught.value.status == 409
    assert after.sweep() == 0


def test_claim_recorded_with_a_pid_that_is_gone_is_ambiguous(tmp_path: Path) -> None:
    process = multiprocessing.get_context("spawn").Process(target=int)
    process.start()
    process.join(timeout=30)
    assert process.exitcode == 0
    store = open_store(tmp_path)
    claim_send(store)
    with sqlite3.connect(tmp_path / FILENAME) as raw:  # as if that finished process had claimed
        raw.execute("UPDATE claims SET pid = ?", (process.pid,))
    with pytest.raises(errors.IdempotencyAmbiguous):
        claim_send(store)


def test_claim_of_a_reused_pid_is_ambiguous(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    claim_send(store)
    with sqlite3.connect(tmp_path / FILENAME) as raw:  # our pid, but started at another time
        raw.execute("UPDATE claims SET pid_start = '1'")
    with pytest.raises(errors.IdempotencyAmbiguous):
        claim_send(store)


# -- abandon -----------------------------------------------------------------------------------


def test_abandoned_claim_frees_the_key(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    store.abandon(claim_send(store))
    retry = claim_send(store, fp=OTHER_FP)  # the refused body may be corrected and retried
    assert retry.outcome is Outcome.NEW


def test_abandon_never_removes_an_answer(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    claim = claim_send(store)
    store.complete(claim, 200, [], b"done")
    store.abandon(claim)
    assert claim_send(store).outcome is Outcome.REPLAY


# -- scopes ------------------------------------------------------------------------------------


def test_scopes_never_share_answers(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    scopes = [
        ("operator", "send", "s1"),
        ("operator", "submit", "s1"),
        ("operator", "send", "s2"),
        ("token:s1", "send", "s1"),
        ("operator", "create", None),
        ("operator", "cancel", "s1"),
        ("operator", "end", "s1"),
        ("operator", "delete", "s1"),
    ]
    for principal, operation, session in scopes:
        claim = store.claim(principal, operation, session, "same-key", FP)
        assert claim.outcome is Outcome.NEW, (principal, operation, session)
        store.complete(claim, 200, [], f"{principal}/{operation}/{session}".encode())
    for principal, operation, session in scopes:
        replay = store.claim(principal, operation, session, "same-key", FP)
        assert replay.answer is not None
        assert replay.answer.body == f"{principal}/{operation}/{session}".encode()


@pytest.mark.parametrize(
    ("operation", "session_id"),
    [("create", "s1"), ("send", None), ("send", ""), ("retry", "s1"), ("SEND", "s1")],
)
def test_scope_must_be_well_formed(tmp_path: Path, operation: str, session_id: str | None) -> None:
    with pytest.raises(ValueError):
        open_store(tmp_path).claim("operator", operation, session_id, "k", FP)


# -- keys and fingerprints ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["", "a" * 256, "has space", "tab\there", "caf\u00e9", "del\x7f", "nl\n", None, b"bytes", 7],
)
def test_invalid_keys_are_refused_without_echo(tmp_path: Path, key: object) -> None:
    with pytest.raises(errors.InvalidRequest) as caught:
        open_store(tmp_path).claim("operator", "send", "s1", key, FP)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_request" and caught.value.status == 400
    if isinstance(key, str) and len(key) > 2:
        assert key not in caught.value.message


@pytest.mark.parametrize("key", ["a", "~" * 255, "!\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~"])
def test_valid_keys_are_accepted(tmp_path: Path, key: str) -> None:
    assert validate_key(key) == key
    assert open_store(tmp_path).claim("operator", "send", "s1", key, FP).outcome is Outcome.NEW


def test_fingerprint_canonicalises_json_only() -> None:
    base = fingerprint("POST", PATH, b'{"input": "hi", "n": 1}')
    assert fingerprint("post", PATH, b'{ "n":1,"input":"hi" }') == base
    assert fingerprint("POST", PATH, b'{"input": "hi", "n": 2}') != base
    assert fingerprint("POST", "/v1/sessions/s2/messages", b'{"input": "hi", "n": 1}') != base
    assert fingerprint("PUT", PATH, b'{"input": "hi", "n": 1}') != base
    assert fingerprint("POST", PATH, b"not json ") != fingerprint("POST", PATH, b"not json")
    assert fingerprint("POST", PATH, b"\xff\xfe") != fingerprint("POST", PATH, b"")
    assert len(base) == 64 and int(base, 16) >= 0


def test_boot_ids_are_random_and_required(tmp_path: Path) -> None:
    assert new_boot_id() != new_boot_id()
    with pytest.raises(ValueError):
        IdempotencyStore(tmp_path / FILENAME, boot_id="")


# -- expiry ------------------------------------------------------------------------------------


def test_answers_expire_after_retention_and_sweep_removes_them(tmp_path: Path) -> None:
    clock = Clock()
    store = open_store(tmp_path, clock=clock)
    answered_at = clock.now
    store.complete(claim_send(store), 200, [], b"old")
    clock.now = answered_at + 86400 - 1
    assert claim_send(store).outcome is Outcome.REPLAY
    assert store.sweep() == 0
    clock.now = answered_at + 86400 + 1
    assert store.sweep() == 1
    assert store.sweep() == 0
    fresh = claim_send(store, fp=OTHER_FP)
    assert fresh.outcome is Outcome.NEW


def test_expired_answer_is_new_even_before_a_sweep(tmp_path: Path) -> None:
    clock = Clock()
    store = open_store(tmp_path, clock=clock, retention_secs=60)
    store.complete(claim_send(store), 200, [], b"old")
    clock.now += 61
    claim = claim_send(store)
    assert claim.outcome is Outcome.NEW
    store.complete(claim, 201, [], b"new")
    assert claim_send(store).answer.body == b"new"  # type: ignore[union-attr]


def test_sweep_with_explicit_now_and_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(idempotency, "SWEEP_BATCH", 3)
    clock = Clock()
    store = open_store(tmp_path, clock=clock)
    for n in range(7):
        store.complete(claim_send(store, key=f"k{n}"), 200, [], b"x")
    assert store.sweep(now=clock.now + 86400) == 0
    assert store.sweep(now=clock.now + 86400.5) == 7


def test_unanswered_claims_are_never_swept_running_or_dead(tmp_path: Path) -> None:
    clock = Clock()
    claim_send(open_store(tmp_path, boot_id="old-boot", clock=clock), key="dead")
    store = open_store(tmp_path, clock=clock)
    running = claim_send(store, key="running")
    clock.now += 3 * 86400  # a turn with no wall-time bound may run this long
    assert store.sweep() == 0
    with pytest.raises(errors.RequestInProgress):
        claim_send(store, key="running")
    with pytest.raises(errors.IdempotencyAmbiguous):
        claim_send(store, key="dead")
    store.complete(running, 200, [], b"late")
    assert claim_send(store, key="running").outcome is Outcome.REPLAY


def test_an_ambiguous_claim_never_expires_so_its_request_never_runs_again(
    tmp_path: Path,
) -> None:
    """A claim with no answer after a restart is never executed again, however long ago it was
    made; only answers expire (the request ran, and its answer was sent)."""
    clock = Clock()
    claim_send(open_store(tmp_path, boot_id="old-boot", clock=clock, retention_secs=60))
    store = open_store(tmp_path, clock=clock, retention_secs=60)
    for elapsed in (59, 61, 86400 + 1, 365 * 86400):
        clock.now += elapsed
        assert store.sweep() == 0
        with pytest.raises(errors.IdempotencyAmbiguous):
            claim_send(store)
        with pytest.raises(errors.IdempotencyConflict):  # the key stays taken for any body
            claim_send(store, fp=OTHER_FP)
    with sqlite3.connect(tmp_path / FILENAME) as raw:
        assert raw.execute("SELECT count(*) FROM claims WHERE status IS NULL").fetchone() == (1,)


def test_sweep_removes_expired_answers_and_keeps_ambiguous_claims(tmp_path: Path) -> None:
    clock = Clock()
    claim_send(open_store(tmp_path, boot_id="old-boot", clock=clock), key="ambiguous")
    store = open_store(tmp_path, clock=clock)
    store.complete(claim_send(store, key="answered"), 200, [], b"x")
    clock.now += 86400 + 1
    assert store.sweep() == 1
    assert claim_send(store, key="answered").outcome is Outcome.NEW
    with pytest.raises(errors.IdempotencyAmbiguous):
        claim_send(store, key="ambiguous")


# -- connection per process --------------------------------------------------------------------


def _claim_in_forked_child(store: IdempotencyStore, queue: multiprocessing.Queue) -> None:
    claim = store.claim("operator", "send", "s1", "from-child", FP)
    store.complete(claim, 200, [("X-Pid", "child")], b"child")
    queue.put((claim.outcome.value, id(store._conn)))


# The child only opens its own SQLite connection and answers through a multiprocessing queue.
@pytest.mark.filterwarnings(FORK_WITH_THREADS)
def test_a_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    claim_send(store)
    parent_conn = store._conn
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_claim_in_forked_child, args=(store, queue))
    child.start()
    try:
        outcome, child_conn_id = queue.get(timeout=30)
        child.join(timeout=30)
    finally:
        if child.is_alive():
            child.kill()
            child.join(timeout=10)
    assert child.exitcode == 0
    assert outcome == "new" and child_conn_id != id(parent_conn)
    assert store._conn is parent_conn
    replay = store.claim("operator", "send", "s1", "from-child", FP)
    assert replay.answer == idempotency.Answer(200, [("X-Pid", "child")], b"child")
    with pytest.raises(errors.RequestInProgress):
        claim_send(store)


def test_a_stale_claim_never_touches_a_later_claim_of_its_key(tmp_path: Path) -> None:
    clock = Clock()
    store = open_store(tmp_path, clock=clock, retention_secs=60)
    old = claim_send(store)
    store.complete(old, 200, [], b"old")
    clock.now += 61
    new = claim_send(store)
    assert new.outcome is Outcome.NEW and new.token != old.token
    store.abandon(old)
    with pytest.raises(ValueError):
        store.complete(old, 200, [], b"stale")
    with pytest.raises(errors.RequestInProgress):
        claim_send(store)
    store.complete(new, 201, [], b"new")
    assert claim_send(store).answer == idempotency.Answer(201, [], b"new")


def test_claim_waits_for_another_writer_up_to_the_busy_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(idempotency, "BUSY_TIMEOUT_MS", 300)
    store = open_store(tmp_path)
    claim_send(store, key="opened")
    other = sqlite3.connect(tmp_path / FILENAME, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")  # another worker holds the write lock
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            claim_send(store)
        assert 0.25 < time.monotonic() - started < 5
        releaser = threading.Timer(0.1, other.execute, args=("COMMIT",))
        releaser.start()
        assert claim_send(store).outcome is Outcome.NEW  # it waited, then won
        releaser.join(timeout=5)
    finally:
        other.close()
