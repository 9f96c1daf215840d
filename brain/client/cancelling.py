"""A synchronous send that a CancelSignal can cancel.

The product page requires that "the SDK waits for admission before cancelling and waits for any
issued cancellation request before returning". A cancel that reaches the server before the turn
is admitted finds the session idle and does nothing (200, sequence null), after which the turn
would run to completion unnoticed; so the SDK must first observe that the turn exists.

How admission is observed: before sending, the SDK reads the session's `last_sequence` (the
baseline). The message is sent from a worker thread on its own pooled connection, carrying an
Idempotency-Key (the caller's or a generated one). When the signal fires, the calling thread
polls GET /v1/sessions/{id} (which never activates the session) until the session's `turn` has
a sequence above the baseline, i.e. a turn_started record committed after the send began, or the
send has returned. If that turn is still running, it POSTs cancel (with its own generated key, so
a broken connection can safely resend it) and waits for the answer. Then it waits for the send's
TurnResult, which normally has status failed and error code cancelled, and returns it.

The caller must own the session exclusively while sending (the product page: "use a fresh handle
for an exclusively owned child"); otherwise another owner's turn could be taken for this one.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import TYPE_CHECKING, Any

from brain.client import routes
from brain.client.admission_watch import CANCEL, READ_STATE, cancel_after_admission, drive
from brain.client.errors import Cancelled
from brain.client.shapes import CancelAnswer, TurnResult
from brain.client.signal import CancelSignal

if TYPE_CHECKING:
    from brain.client.api import Api

WAIT_SLICE_SECS = 1.0


class _Outcome:
    """The worker's answer or exception, handed to the calling thread."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: TurnResult | None = None
        self.error: BaseException | None = None

    def value(self) -> TurnResult:
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def send_with_signal(api: Api, session_id: str, turn_input: Any, key: str,
                     signal: CancelSignal, timeout: float | None,
                     limits: dict[str, int] | None = None) -> TurnResult:
    """Send `turn_input` under `key`; once `signal` fires, cancel the turn after admission."""
    if signal.cancelled:
        raise Cancelled("the signal had fired before the message was sent; nothing was sent")
    path = routes.session_path(session_id)
    baseline = api.run(routes.get_session(path)).get("last_sequence") or 0
    outcome = _Outcome()
    wake = threading.Event()

    def run() -> None:
        try:
            outcome.result = api.run(routes.send(path, turn_input, key, timeout, limits))
        except BaseException as exc:  # handed to the caller's thread
            outcome.error = exc
        finally:
            outcome.done.set()
            wake.set()

    remove = signal.add_callback(wake.set)
    worker = threading.Thread(target=run, name=f"brain-send-{session_id}", daemon=True)
    worker.start()
    cancel: CancelAnswer | None = None
    try:
        while not outcome.done.is_set() and not signal.cancelled:
            wake.wait(WAIT_SLICE_SECS)
        if not outcome.done.is_set():
            cancel = _cancel_after_admission(api, session_id, baseline, outcome)
        while not outcome.done.wait(WAIT_SLICE_SECS):
            pass  # the send's own socket timeouts (or client close) bound this wait
        worker.join()
    finally:
        remove()
    result = outcome.value()
    return dataclasses.replace(result, cancel_request=cancel) if cancel else result


def _cancel_after_admission(api: Api, session_id: str, baseline: int,
                            outcome: _Outcome) -> CancelAnswer | None:
    """Poll until our turn is visible, then cancel it if it still runs; None if not needed
    (brain/client/admission_watch.py, driven with blocking calls)."""
    if outcome.done.is_set():
        return None
    watch = cancel_after_admission(session_id, baseline)
    path = routes.session_path(session_id)

    def perform(step: Any) -> Any:
        if step == READ_STATE:
            return api.run(routes.get_session(path))
        if isinstance(step, tuple) and step[0] == CANCEL:
            return api.run(routes.cancel(path, step[1]))
        return outcome.done.wait(step)

    return drive(watch, perform)
