"""Idempotency-Key values: generating fresh ones and checking caller-supplied ones.

The server accepts 1-255 visible ASCII characters. Checking locally turns a typo into a
ValueError before anything is sent, instead of a 400 after a claim attempt.
"""

from __future__ import annotations

import re
import uuid

_VALID = re.compile(r"[!-~]{1,255}")


def new_idempotency_key(prefix: str = "brain-py") -> str:
    """A key unique to one logical operation; keep it to retry that operation after a failure."""
    return f"{prefix}-{uuid.uuid4().hex}"


def check_idempotency_key(key: str) -> str:
    if not isinstance(key, str) or not _VALID.fullmatch(key):
        raise ValueError("an Idempotency-Key is 1-255 visible ASCII characters ('!' to '~')")
    return key
