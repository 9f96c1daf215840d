"""Webhook signatures by the Standard Webhooks convention, and nothing else.

A delivery carries `webhook-id` (the same for every attempt of one delivery, so a receiver can
deduplicate), `webhook-timestamp` (integer Unix seconds of this attempt) and
`webhook-signature`: `v1,` and the base64 of HMAC-SHA256 over `{id}.{timestamp}.{body}`, keyed
with the secret's decoded bytes (the secret is written `whsec_` and that key in base64). The
receiver recomputes it and checks the timestamp is recent, which bounds replays. Errors here
never quote the secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

SECRET_PREFIX = "whsec_"


def secret_key(secret: str) -> bytes:
    """The HMAC key of a `whsec_<base64>` secret; ValueError (not quoting it) when malformed."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError(f"expected {SECRET_PREFIX} followed by a base64 key")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX):], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"the part after {SECRET_PREFIX} is not base64") from None
    if len(key) < 16:
        raise ValueError("the key must be at least 16 bytes (24 base64 characters)")
    return key


def signature(key: bytes, delivery_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` value: `v1,<base64 HMAC-SHA256>`."""
    signed = f"{delivery_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(key: bytes, delivery_id: str, timestamp: int, body: bytes
                   ) -> dict[str, str]:
    """The three Standard Webhooks headers of one attempt."""
    return {"webhook-id": delivery_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": signature(key, delivery_id, timestamp, body)}
