"""HTTP idempotency claims and answers, durable across restarts (docs/idempotency.md).

One SQLite file (`$BRAIN_DATA_DIR/idempotency.sqlite3`, WAL, `synchronous=FULL`) is shared by
every gunicorn worker. A request first *claims* its key: the claim is committed to disk before
`claim` returns, so the work it guards never starts without a durable trace. The answer is stored
on the same row when the work ends and replayed byte-for-byte for the retention window.

A claim with no answer is `request_in_progress` while the process that made it may still finish
it, and `idempotency_ambiguous` once that is impossible: it was made under an older server boot,
or its process is gone. Such a request is never executed again, so a claim without an answer
never expires; only answers do, after the retention window.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from brain.durable_dirs import make_dirs_durable
from brain.errors import IdempotencyAmbiguous, IdempotencyConflict, RequestInProgress
from brain.fds import close_fd
from brain.web.idempotency_claims import (
    MAX_KEY_LENGTH,
    Answer,
    Claim,
    Outcome,
    fingerprint,
    new_boot_id,
    validate_key,
)
from brain.web.process_identity import own_start_time, process_alive

__all__ = ["FILENAME", "MAX_KEY_LENGTH", "OPERATIONS", "Answer", "Claim", "IdempotencyStore",
           "Outcome", "fingerprint", "new_boot_id", "validate_key"]

FILENAME = "idempotency.sqlite3"
OPERATIONS = frozenset({"create", "fork", "send", "submit", "cancel", "end", "delete"})
T = TypeVar("T")
BUSY_TIMEOUT_MS = 5000
MAX_BUSY_NAP_SECS = 0.002
SWEEP_BATCH = 500
_SCHEMA_VERSION = 1
_KEY = "principal, operation, session_id, key"
_ROW = "principal = ? AND operation = ? AND session_id = ? AND key = ?"
_SETUP_LOCK = threading.Lock()  # guards only the per-process setup in `_process_lock`

_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    principal   TEXT NOT NULL,
    operation   TEXT NOT NULL,
    session_id  TEXT NOT NULL,      -- '' for create, which has no session yet
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    token       TEXT NOT NULL,      -- which claim of this key: a reclaimed key gets another
    boot_id     TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    pid_start   TEXT NOT NULL,      -- /proc starttime of pid, so a reused pid is not mistaken
    claimed_at  REAL NOT NULL,
    status      INTEGER,            -- NULL until the answer is stored
    headers     TEXT,               -- JSON [[name, value], ...] in the order sent
    body        BLOB,
    answered_at REAL,
    PRIMARY KEY (principal, operation, session_id, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS claims_answered ON claims (answered_at)
    WHERE answered_at IS NOT NULL;
-- claims_open served the expiry of unanswered claims, which never expire now
DROP INDEX IF EXISTS claims_open;
"""


class IdempotencyStore:
    """Claims and answers for (principal, operation, session, key), shared by all workers.

    Create one per worker process; the connection is opened lazily and re-opened in a forked
    child (a SQLite connection must never be used on both sides of a fork). `boot_id` must be the
    same for every worker of one `brain serve` start and new on each start: it is what tells a
    request still running from one that was cut off by a restart.
    """

    def __init__(
        self,
        path: Path,
        *,
        boot_id: str,
        retention_secs: float = 86400,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not boot_id:
            raise ValueError("boot_id is required")
        self.path = Path(path)
        self.boot_id = boot_id
        self.retention_secs = retention_secs
        self._clock = clock
        self._pid = -1  # the process that owns `_lock` and `_conn`
        self._pid_start = ""
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._inherited: list[sqlite3.Connection] = []

    # -- public API ------------------------------------------------------------------------

    def claim(
        self,
        principal: str,
        operation: str,
        session_id: str | None,
        key: str,
        body_fingerprint: str,
    ) -> Claim:
        """Claim a key durably, or return the stored answer, or raise the contract's 409.

        Exactly one of several concurrent claimers of a key wins: the row's primary key decides,
        inside one write transaction, never a read followed by a write.
        """
        validate_key(key)
        scope = _scope(principal, operation, session_id)
        now = self._clock()
        token = secrets.token_hex(16)
        values = (*scope, key, body_fingerprint, token, self.boot_id, now)
        with self._transaction() as conn:
            if self._insert(conn, values):
                return Claim(Outcome.NEW, principal, operation, session_id, key, token)
            row = conn.execute(
                "SELECT fingerprint, token, boot_id, pid, pid_start, claimed_at, status,"
                f" headers, body, answered_at FROM claims WHERE {_ROW}",
                (*scope, key),
            ).fetchone()
            if self._expired(row, now):
                conn.execute(f"DELETE FROM claims WHERE {_ROW}", (*scope, key))
                if not self._insert(conn, values):
                    raise RuntimeError("an expired idempotency claim could not be replaced")
                return Claim(Outcome.NEW, principal, operation, session_id, key, token)
        fp, token, boot_id, pid, pid_start, _, status, headers, body, _ = row
        if fp != body_fingerprint:
            raise IdempotencyConflict("this Idempotency-Key was used with a different request")
        if status is not None:
            answer = Answer(status, [(n, v) for n, v in json.loads(headers)], bytes(body))
            return Claim(Outcome.REPLAY, principal, operation, session_id, key, token, answer)
        if self._claimer_alive(boot_id, pid, pid_start):
            raise RequestInProgress("a request with this Idempotency-Key is still running")
        raise IdempotencyAmbiguous(
            "a request with this Idempotency-Key was interrupted and has no recorded answer;"
            " inspect the session before choosing a new key"
        )

    def complete(
        self, claim: Claim, status: int, headers: Sequence[tuple[str, str]], body: bytes
    ) -> None:
        """Store the answer that was sent for a NEW claim; it is durable when this returns."""
        if claim.outcome is not Outcome.NEW:
            raise ValueError("only a NEW claim can be completed")
        if not 100 <= status <= 599:
            raise ValueError("status must be an HTTP status code")
        pairs = [[str(name), str(value)] for name, value in headers]
        answer = (status, json.dumps(pairs), bytes(body), self._clock())
        with self._transaction() as conn:
            cursor = conn.execute(
                "UPDATE claims SET status = ?, headers = ?, body = ?, answered_at = ?"
                f" WHERE {_ROW} AND token = ? AND status IS NULL",
                (*answer, *_row_of(claim), claim.token),
            )
            if cursor.rowcount != 1:
                raise ValueError("the claim is not open: completed or abandoned already")

    def abandon(self, claim: Claim) -> None:
        """Forget a NEW claim whose work provably never started, so its key can be used again.

        Only for refusals decided before anything could act on the request (validation, a busy
        session); once the work may have begun, `complete` with whatever answer was sent.
        """
        if claim.outcome is not Outcome.NEW:
            raise ValueError("only a NEW claim can be abandoned")
        with self._transaction() as conn:
            conn.execute(
                f"DELETE FROM claims WHERE {_ROW} AND token = ? AND status IS NULL",
                (*_row_of(claim), claim.token),
            )

    def sweep(self, now: float | None = None) -> int:
        """Delete expired answers; return how many rows went.

        `claim` already treats an expired answer as absent, so sweeping only reclaims space. It
        runs in small transactions so that claims from other workers wait for one batch at most.
        Claims without an answer are never deleted: running or ambiguous, they hold their key.
        """
        cutoff = (self._clock() if now is None else now) - self.retention_secs
        removed = 0
        while True:
            with self._transaction() as conn:
                cursor = conn.execute(
                    f"DELETE FROM claims WHERE ({_KEY}) IN (SELECT {_KEY} FROM claims"
                    " WHERE answered_at IS NOT NULL AND answered_at < ? LIMIT ?)",
                    (cutoff, SWEEP_BATCH),
                )
            removed += cursor.rowcount
            if cursor.rowcount < SWEEP_BATCH:
                break
            time.sleep(0)  # let other greenlets run between batches under gevent
        return removed

    def close(self) -> None:
        """Close this process's connection; a later call opens a new one."""
        with self._process_lock():
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- internals -------------------------------------------------------------------------

    def _expired(self, row: tuple, now: float) -> bool:
        """Only an answer past retention frees its key. A claim with no answer never does:
        reusing its key must keep answering `idempotency_ambiguous`, or the request it guards
        could run a second time (docs/http-api.md)."""
        answered_at = row[-1]
        return answered_at is not None and answered_at < now - self.retention_secs

    def _claimer_alive(self, boot_id: str, pid: int, pid_start: str) -> bool:
        return boot_id == self.boot_id and process_alive(pid, pid_start)

    def _insert(self, conn: sqlite3.Connection, values: tuple) -> bool:
        """Insert a claim row unless its key is taken; the primary key decides, atomically."""
        cursor = conn.execute(
            "INSERT INTO claims (principal, operation, session_id, key, fingerprint, token,"
            " boot_id, claimed_at, pid, pid_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            f" ON CONFLICT ({_KEY}) DO NOTHING",
            (*values, self._pid, self._pid_start),
        )
        return cursor.rowcount == 1

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """`BEGIN IMMEDIATE` ... `COMMIT`; durable on return, rolled back on any error.

        IMMEDIATE takes SQLite's write lock at once, so two workers never both see a key as free.
        The lock keeps greenlets or threads of one worker off the shared connection meanwhile.
        """
        with self._process_lock():
            conn = self._connection()
            _begin_immediate(conn)
            try:
                yield conn
                conn.execute("COMMIT")
            finally:
                if conn.in_transaction:
                    self._rollback(conn)

    def _rollback(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            conn.close()  # unusable; the next transaction opens a fresh connection
            self._conn = None

    def _process_lock(self) -> threading.Lock:
        """The lock of the current process, set up afresh on first use in each process.

        Made here rather than in __init__ so that it is gevent's lock when the worker is patched
        after the store was built (a real lock held across a gevent yield would deadlock), and a
        new one after fork, as the parent's may have been held at that instant. An inherited
        connection is never touched, not even closed: that could checkpoint or unlock on the
        parent's behalf. It is kept referenced so it is never finalised in the child.
        """
        pid = os.getpid()
        if self._pid != pid:
            with _SETUP_LOCK:
                if self._pid != pid:
                    if self._conn is not None:
                        self._inherited.append(self._conn)
                        self._conn = None
                    self._lock = threading.Lock()
                    self._pid_start = own_start_time()
                    self._pid = pid
        return self._lock

    def _connection(self) -> sqlite3.Connection:
        """This process's connection, opened on first use here; call with the lock held."""
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        """Open, set WAL + FULL sync, create the schema; SQLite's busy_timeout covers setup."""
        make_dirs_durable(self.path.parent)
        created = not self.path.exists()
        conn = sqlite3.connect(
            self.path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # Switching to WAL takes a lock for which SQLite does not always call its busy
            # handler: a worker opening while another creates the schema got "database is
            # locked" at once. The mode is persistent, so it is set only when not yet WAL, and
            # a busy answer is waited out like any other.
            mode = _when_not_busy(lambda: conn.execute("PRAGMA journal_mode").fetchone()[0])
            if str(mode).lower() != "wal":
                mode = _when_not_busy(
                    lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                )
            if str(mode).lower() != "wal":
                raise RuntimeError(f"SQLite refused WAL mode for the idempotency store ({mode})")
            conn.execute("PRAGMA synchronous = FULL")
            _begin_immediate(conn)
            for statement in filter(str.strip, _SCHEMA.split(";")):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            conn.execute("COMMIT")
            # From here on every statement runs inside BEGIN IMMEDIATE, whose wait for the write
            # lock `_begin_immediate` does cooperatively, bounded by the same BUSY_TIMEOUT_MS. In
            # WAL mode nothing waits once that lock is held (commit-time checkpoints are passive),
            # so SQLite's blocking handler is switched off rather than toggled per transaction.
            conn.execute("PRAGMA busy_timeout = 0")
        except BaseException:
            conn.close()
            raise
        if created:
            _fsync_dir(self.path.parent)
        return conn


def _begin_immediate(conn: sqlite3.Connection) -> None:
    """Take SQLite's write lock, waiting for other workers cooperatively up to the busy timeout.

    SQLite's own busy handler sleeps inside C, which stalls every greenlet of a gevent worker, and
    backs off to 100 ms naps while other workers keep taking the lock (measured: a 1.5 s stall
    with four workers). `time.sleep` is a yield under gevent, and the short capped naps keep the
    wait fair. SQLite's own handler is therefore off outside `_open` (see there).
    """
    _when_not_busy(lambda: conn.execute("BEGIN IMMEDIATE"))


def _when_not_busy(statement: Callable[[], T]) -> T:
    """Run `statement`, retrying while SQLite answers SQLITE_BUSY, with short jittered naps
    that yield under gevent, for at most BUSY_TIMEOUT_MS; other errors raise at once."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    nap = 0.0001
    while True:
        try:
            return statement()
        except sqlite3.OperationalError as exc:
            busy = (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() > deadline:
                raise
        time.sleep(nap * random.uniform(0.5, 1.5))
        nap = min(nap * 2, MAX_BUSY_NAP_SECS)


def _scope(principal: str, operation: str, session_id: str | None) -> tuple[str, str, str]:
    """The row key before `key`: create has no session; every other operation needs one."""
    if not principal:
        raise ValueError("principal is required")
    if operation not in OPERATIONS:
        raise ValueError(f"unknown idempotent operation {operation!r}")
    if (operation == "create") != (session_id is None):
        raise ValueError("session_id is None for create and required for every other operation")
    if session_id == "":
        raise ValueError("session_id must not be empty")
    return principal, operation, session_id or ""


def _row_of(claim: Claim) -> tuple[str, str, str, str]:
    return (*_scope(claim.principal, claim.operation, claim.session_id), claim.key)


def _fsync_dir(directory: Path) -> None:
    """Make a newly created database file's directory entry durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        close_fd(fd)
