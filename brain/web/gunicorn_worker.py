"""The gunicorn worker Brain serves with: gunicorn's gevent worker, answering in Brain's terms.

gunicorn refuses a request its parser cannot read (a header over 8,190 bytes, a request line
over 4,094, a NUL in a header, Content-Length beside Transfer-Encoding, ...) before the app sees
it, and writes that refusal as an HTML page. This worker writes every such refusal in the
contract's error shape instead, with its status and an `X-Request-Id` (brain/web/errors.py maps
the parser's exceptions). It also checks what the parser lets through but the app cannot tell
apart once the headers are joined into the WSGI environ (a header that must appear once, sent
twice), and bounds the time a request body may take (brain/web/timed_body.py).

`worker_class` in brain/web/gunicorn_conf.py names it, so `brain serve`, `brain web` and plain
`gunicorn -c` all use it.
"""

from __future__ import annotations

from typing import Any

from gunicorn import util
from gunicorn.workers.ggevent import GeventWorker

from brain import errors
from brain.web.errors import raw_error_response, refusal
from brain.web.middleware import new_request_id
from brain.web.timed_body import TimedBody

SINGLE_HEADERS = {"IDEMPOTENCY-KEY": "Idempotency-Key", "AUTHORIZATION": "Authorization",
                  "CONTENT-TYPE": "Content-Type", "LAST-EVENT-ID": "Last-Event-ID"}
"""Headers a request may carry once. WSGI joins repeats with commas (`a1,a2`), and gunicorn
keeps only the last Content-Type: either way the app would act on a value nobody sent."""

BODY_BUDGET_SECS = 5.0
"""The body's time budget when gunicorn's `keepalive` is 0 (otherwise the body gets what a
head gets: `keepalive` seconds)."""


def repeated_single_header(headers: list[tuple[str, str]]) -> str | None:
    """The name of the first header of SINGLE_HEADERS that `headers` (gunicorn's list of
    upper-cased names and values) carries more than once, or None."""
    seen: set[str] = set()
    for name, _ in headers:
        if name in SINGLE_HEADERS:
            if name in seen:
                return SINGLE_HEADERS[name]
            seen.add(name)
    return None


class BrainGeventWorker(GeventWorker):
    """gunicorn's gevent worker with contract-shaped refusals and a bounded body read."""

    def handle_request(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> Any:
        repeated = repeated_single_header(req.headers)
        if repeated is not None:
            raise errors.InvalidRequest(f"the {repeated} header is sent more than once")
        body = req.body
        req.body = TimedBody(req, self.cfg.keepalive or BODY_BUDGET_SECS)
        try:
            return super().handle_request(listener_name, req, sock, addr)
        finally:
            # What the app left unread is drained by gunicorn between requests, under its own
            # bound for the next head: the body's deadline no longer applies.
            req.body = body

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        error = refusal(exc)
        request_id = new_request_id()
        peer = addr[0] if addr else "unix socket"
        if error.status >= 500:
            self.log.exception("Error handling request (%s)", request_id)
        else:
            self.log.warning("Refused a request from %s with %d: %s (%s)", peer, error.status,
                             error.message, request_id)
        try:
            util.write_nonblock(client, raw_error_response(error, request_id))
        except Exception:  # the client is gone: nothing more to tell it
            self.log.debug("Failed to send an error answer (%s)", request_id)
