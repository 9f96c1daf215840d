"""Idempotency-Key as Falcon middleware (docs/http-api.md, docs/idempotency.md).

A resource opts in per method with a class attribute naming the scope of the work:
`idempotent = {"POST": "create"}`, or a function of the request where one route holds two
scopes (send and submit). For such a request that carries a key:

- `process_resource` claims the key durably before the responder runs; a key already answered
  replays the stored answer instead, by completing the response (`resp.complete`), so the
  responder never runs again. A conflict, a request still running or an ambiguous claim is
  raised as the contract's 409.
- `process_response` stores whatever answer is about to be sent — success, or an error the
  handlers of brain/web/errors.py rendered — and sends exactly the stored bytes.

An exception no handler renders (a BaseException such as a killed greenlet) skips Falcon's
response middleware, so nothing is stored and the claim stays unanswered: in progress while
this worker lives, ambiguous after, never executed twice. The store (brain/web/idempotency.py)
decides replay, conflict, in-progress and ambiguous.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from typing import Any

import falcon

from brain.settings import Settings
from brain.web.background import spawn_background
from brain.web.bodies import SMALL_BODY_LIMIT, raw_body
from brain.web.contract import operation_of
from brain.web.idempotency import (
    FILENAME,
    Answer,
    IdempotencyStore,
    Outcome,
    fingerprint,
    new_boot_id,
    validate_key,
)

log = logging.getLogger(__name__)

REPLAYED_HEADERS = ("content-type", "location", "preference-applied")
SWEEP_INTERVAL_SECS = 600.0
STORE_RETRY_SECS = 1.0  # an answer the store could not take (disk full) is offered again
STORE_RETRY_FOR_SECS = 3600.0


class IdempotencyMiddleware:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        # `brain serve` gives every worker the same boot id; a bare gunicorn run gets one per
        # worker, which only makes other workers' unanswered claims look ambiguous sooner.
        self._boot_id = settings.boot_id or new_boot_id()
        self._store: IdempotencyStore | None = None
        self._lock = threading.Lock()

    def store(self) -> IdempotencyStore:
        with self._lock:
            if self._store is None:
                self._store = IdempotencyStore(self._settings.data_path / FILENAME,
                                               boot_id=self._boot_id)
                _spawn_sweeper(self._store)
            return self._store

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         params: dict[str, Any]) -> None:
        scope = getattr(resource, "idempotent", {}).get(req.method)
        key = req.get_header("Idempotency-Key")
        if scope is None or key is None:
            return
        validate_key(key)
        operation = scope(req) if callable(scope) else scope
        declared = operation_of(getattr(resource, f"on_{req.method.lower()}", None))
        body = raw_body(req, declared.body_limit if declared else SMALL_BODY_LIMIT)
        claim = self.store().claim(req.context.principal, operation, params.get("session_id"),
                                   key, fingerprint(req.method, req.path, body))
        if claim.outcome is Outcome.REPLAY:
            _send(resp, claim.answer)
            resp.complete = True  # the responder does not run again
            return
        req.context.idempotency_claim = claim
        pause = self._settings.test_pause_after_claim_secs
        if pause:
            time.sleep(pause)  # test hook: a window to kill the server between claim and answer

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: Any,
                         req_succeeded: bool) -> None:
        claim = req.context.get("idempotency_claim")
        if claim is None:
            return
        req.context.idempotency_claim = None
        if req.context.get("nothing_done"):
            self.store().abandon(claim)  # shed (503 overloaded): a retry with the key runs
            return
        answer = Answer(status=_status_code(resp),
                        headers=[(name, value) for name, value in resp.headers.items()
                                 if name.lower() in REPLAYED_HEADERS],
                        body=resp.render_body() or b"")
        try:
            self.store().complete(claim, answer.status, answer.headers, answer.body)
        except sqlite3.Error as exc:
            # The client still gets its answer; the claim is answered once the store can
            # take it. Until then a retry is `request_in_progress`, never a second run.
            log.error("idempotency answer not stored (%s); storing it once the store can", exc)
            _complete_later(self.store(), claim, answer)
        _send(resp, answer)


def _status_code(resp: falcon.Response) -> int:
    status = resp.status
    return status if isinstance(status, int) else int(str(status).split()[0])


def _send(resp: falcon.Response, answer: Answer) -> None:
    resp.status = answer.status
    resp.media = None
    resp.text = None
    resp.data = answer.body
    for name, value in answer.headers:
        resp.set_header(name, value)


def _complete_later(store: IdempotencyStore, claim: Any, answer: Answer) -> None:
    """Offer the answer again every STORE_RETRY_SECS (a full disk frees up), for an hour.

    Not the PostgreSQL fsync trap: SQLite rolls a failed transaction back, and each offer is a
    new transaction that either commits durably or fails again.
    """
    def store_answer() -> None:
        deadline = time.monotonic() + STORE_RETRY_FOR_SECS
        while time.monotonic() < deadline:
            time.sleep(STORE_RETRY_SECS)
            try:
                store.complete(claim, answer.status, answer.headers, answer.body)
                return
            except sqlite3.Error:
                continue
            except ValueError:
                return  # answered or abandoned meanwhile
        log.error("idempotency answer never stored; the key reads as in progress until a "
                  "restart makes it idempotency_ambiguous")

    spawn_background(store_answer, "idempotency-answer-retry")


def _spawn_sweeper(store: IdempotencyStore) -> None:
    def sweep_forever() -> None:
        while True:
            time.sleep(SWEEP_INTERVAL_SECS)
            try:
                store.sweep()
            except Exception:
                log.exception("idempotency sweep failed")

    spawn_background(sweep_forever, "idempotency-sweeper")
