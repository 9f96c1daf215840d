"""What an idempotency claim is, apart from where it is stored: the outcomes of claiming a key,
the answer kept with it, the key's own rule and the request's fingerprint.

brain/web/idempotency.py stores claims; these are its vocabulary, re-exported from there.
"""

from __future__ import annotations

import enum
import hashlib
import json
import secrets
from dataclasses import dataclass

from brain.errors import InvalidRequest

MAX_KEY_LENGTH = 255


class Outcome(enum.Enum):
    NEW = "new"  # the caller must do the work, then `complete` or `abandon`
    REPLAY = "replay"  # the work was done; send `Claim.answer` as it is


@dataclass(frozen=True)
class Answer:
    """A response exactly as it was first sent: replaying it must not re-render anything."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass(frozen=True)
class Claim:
    """The result of `IdempotencyStore.claim`.

    `token` tells this claim from a later claim of the same key (after `abandon`, or after its
    answer expired), so a late `complete` or `abandon` can never touch a row it did not create.
    """

    outcome: Outcome
    principal: str
    operation: str
    session_id: str | None
    key: str
    token: str
    answer: Answer | None = None


def new_boot_id() -> str:
    """A random id for one `brain serve` start; every worker of that start must get the same."""
    return secrets.token_hex(16)


def validate_key(key: object) -> str:
    """Return an `Idempotency-Key` of 1-255 visible ASCII characters, else raise InvalidRequest.

    The message never echoes the key: it is client input and may be anything.
    """
    if (
        not isinstance(key, str)
        or not 1 <= len(key) <= MAX_KEY_LENGTH
        or not all("\x21" <= ch <= "\x7e" for ch in key)
    ):
        raise InvalidRequest(
            f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} visible ASCII characters"
        )
    return key


def fingerprint(method: str, path: str, body: bytes) -> str:
    """sha256 hex of method, path and body, with JSON bodies in canonical form.

    Canonical JSON (sorted keys, no spaces) makes a retry that re-serialises the same document
    match; a body that is not JSON is taken byte for byte. Every part is length-prefixed, so no
    two different (method, path, body) triples can be spliced into the same input.
    """
    try:
        document = json.loads(body)
        canonical = b"json:" + json.dumps(
            document, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode("utf-8", "surrogatepass")
    except (ValueError, UnicodeDecodeError, RecursionError):  # not JSON, or nested absurdly
        canonical = b"raw:" + body
    digest = hashlib.sha256()
    for part in (method.upper().encode(), path.encode(), canonical):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()
