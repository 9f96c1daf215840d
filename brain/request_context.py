"""The HTTP request a web worker is serving now: its `x-request-id` and session, if any.

Set by the web tier's request-id middleware, read by the actor gateway (which carries the id to
the actors, so a trace line and the client's `x-request-id` match) and by JSON logging. gevent
runs each request in its own greenlet and greenlets have their own context, so a context
variable is per request without any locking.
"""

from __future__ import annotations

from contextvars import ContextVar

request_id: ContextVar[str | None] = ContextVar("brain_request_id", default=None)
session_id: ContextVar[str | None] = ContextVar("brain_session_id", default=None)
sequence: ContextVar[int | None] = ContextVar("brain_sequence", default=None)
