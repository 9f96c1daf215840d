"""Running a responder under an Idempotency-Key (docs/http-api.md).

The claim is durable before the work starts; whatever answer the work produces — success or
error — is stored with the claim and replayed byte-for-byte for 24 h. The store
(brain/web/idempotency.py) decides conflict, in-progress and ambiguous.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import falcon

from brain.settings import Settings
from brain.web.background import spawn_background
from brain.web.bodies import raw_body
from brain.web.errors import render_error
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


class IdempotencyGate:
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

    def run(self, req: falcon.Request, resp: falcon.Response, operation: str,
            session_id: str | None, body_limit: int, work: Callable[[], None]) -> None:
        key = req.get_header("Idempotency-Key")
        if key is None:
            work()
            return
        validate_key(key)
        body = raw_body(req, body_limit)
        store = self.store()
        claim = store.claim(req.context.principal, operation, session_id, key,
                            fingerprint(req.method, req.path, body))
        if claim.outcome is Outcome.REPLAY:
            _replay(resp, claim.answer)
            return
        pause = self._settings.test_pause_after_claim_secs
        if pause:
            time.sleep(pause)  # test hook: a window to kill the server between claim and answer
        try:
            work()
        except Exception as exc:  # every answer is stored, errors included
            render_error(req, resp, exc)
        answer = Answer(status=_status_code(resp),
                        headers=[(name, value) for name, value in resp.headers.items()
                                 if name.lower() in REPLAYED_HEADERS],
                        body=resp.render_body() or b"")
        store.complete(claim, answer.status, answer.headers, answer.body)
        _replay(resp, answer)


def _status_code(resp: falcon.Response) -> int:
    status = resp.status
    return status if isinstance(status, int) else int(str(status).split()[0])


def _replay(resp: falcon.Response, answer: Any) -> None:
    resp.status = answer.status
    resp.media = None
    resp.text = None
    resp.data = answer.body
    for name, value in answer.headers:
        resp.set_header(name, value)


def _spawn_sweeper(store: IdempotencyStore) -> None:
    def sweep_forever() -> None:
        while True:
            time.sleep(SWEEP_INTERVAL_SECS)
            try:
                store.sweep()
            except Exception:
                log.exception("idempotency sweep failed")

    spawn_background(sweep_forever, "idempotency-sweeper")
