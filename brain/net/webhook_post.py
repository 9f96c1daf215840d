"""One webhook attempt: a signed POST, answered by a 2xx or counted as failed.

Nothing here retries or decides what comes next: the webhook executor
(brain/actors/executors/webhook.py) does. What a failed attempt reports is the receiver's status
or a short reason from brain/net (which never quotes a header or a body), so it can be
journaled: the secret and the signature stay out of it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from brain.net.http_exchange import Exchange, ExchangeFailed, Limits, Origin, default_tls
from brain.net.webhook_signature import signed_headers

RESPONSE_LIMIT = 64 << 10
"""Of a receiver's answer only the status matters; a longer body is not read to its end."""


@dataclass(frozen=True)
class AttemptResult:
    """What one attempt came to: `ok` for a 2xx; else the status (None: no answer) and why."""

    ok: bool
    status: int | None
    error: str = ""


def encode_body(body: dict[str, Any]) -> bytes:
    """The JSON bytes that are sent and signed (the same for every attempt)."""
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8")


def post_webhook(url: str, key: bytes, delivery_id: str, body: bytes, timeout_s: float,
                 cancel: threading.Event) -> AttemptResult:
    """POST `body` to `url` once, signed with `key` at this moment, within `timeout_s`."""
    parts = urlsplit(url)
    tls = parts.scheme == "https"
    origin = Origin(tls, parts.hostname or "", parts.port or (443 if tls else 80))
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {"Content-Type": "application/json", "User-Agent": "Brain-Webhook",
               **signed_headers(key, delivery_id, int(time.time()), body)}
    limits = Limits(deadline=time.monotonic() + timeout_s)
    try:
        with Exchange(origin, limits, cancel, default_tls() if tls else None) as exchange:
            exchange.request("POST", target, headers, body)
            status = exchange.status
            if 200 <= status < 300:
                return AttemptResult(True, status)
            return AttemptResult(False, status, f"the receiver answered {status}")
    except ExchangeFailed as failure:
        return AttemptResult(False, None, str(failure))
