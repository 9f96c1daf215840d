"""A request body that must arrive within a time budget, as a request head must.

gunicorn's gevent worker bounds the wait for a request head (its `keepalive`), but the body is
read later, by the app, from a plain blocking socket: a client that sends its headers and then
trickles, or stops sending, would hold the connection and a greenlet for as long as it likes.
The worker (brain/web/gunicorn_worker.py) wraps every request's body in a `TimedBody`, so each
read waits at most for what is left of the budget, counted from the moment the head was read.

A read that runs out of time raises `errors.RequestTimeout` (408); a chunked body gunicorn
cannot parse raises the contract's 400. Either way the connection is closed after the answer:
where the next request would start is unknown, and waiting for the rest is what the budget
refuses.
"""

from __future__ import annotations

import time
from typing import Any

import gevent
from gunicorn.http.errors import ParseException

from brain import errors
from brain.web.errors import refusal


class TimedBody:
    """gunicorn's request body (`req.body`), read under one deadline for the whole body."""

    def __init__(self, request: Any, budget_secs: float) -> None:
        self._request = request  # gunicorn's Request: `must_close` makes it the last one
        self._body = request.body
        self.budget_secs = budget_secs
        self._deadline = time.monotonic() + budget_secs

    def read(self, size: int | None = None) -> bytes:
        return self._timed(self._body.read, size)

    def readline(self, size: int | None = None) -> bytes:
        return self._timed(self._body.readline, size)

    def readlines(self, hint: int | None = None) -> list[bytes]:
        return self._timed(self._body.readlines, hint)

    def __iter__(self) -> TimedBody:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._body, name)  # `failed` and the like, read by gunicorn's parser

    def _close_after_answer(self) -> None:
        self._request.must_close = True

    def _timed(self, read: Any, size: int | None) -> Any:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise self._timed_out()
        timer = gevent.Timeout(remaining)
        timer.start()
        try:
            return read(size)
        except gevent.Timeout as exc:
            if exc is not timer:
                raise
            raise self._timed_out() from None
        except ParseException as exc:
            self._close_after_answer()
            raise refusal(exc) from None
        finally:
            timer.close()

    def _timed_out(self) -> errors.BrainError:
        self._close_after_answer()
        return errors.RequestTimeout(
            f"the request body did not arrive within {self.budget_secs:g} s")

