"""Sign every Thespian frame Brain sends, and drop every frame that is not signed unread.

Thespian's TCP transport unpickles whatever arrives on an actor's port, and unpickling can run
any code: without this, any local user who can connect to loopback (or anyone on a convention's
network) could run code as Brain. So every frame carries an HMAC of its pickle, keyed by the
actor secret (brain/actors/actor_secret.py), and a frame is unpickled only once its HMAC checks.

The frame stays Thespian's `<length>>body`; Brain's body is `tag + pickle`, where `tag` is the
32-byte HMAC-SHA256 of the pickle. A per-frame tag, rather than a handshake per connection, needs
no state on Thespian's reused connections and no change to its transmit steps: every frame is
judged alone.

In Thespian's TCP transport module this replaces:

- the module's `serializer` (the `pickle` module): `dumps` signs, `loads` checks the tag before
  it unpickles. Every place the transport turns bytes it read into objects (an incoming message,
  an acknowledgement, a message read while waiting for one) makes its receive buffer with
  `serializer.loads`, so no received byte reaches pickle unchecked. A frame that fails reads as
  Thespian's own data-error acknowledgement (`ACK+DATAERR`), which every one of those paths
  already handles: a sender takes it for a refused message, a receiver refuses it in turn;
- `ackMsg` and `ackDataErrMsg`, the acknowledgements, now signed like any frame;
- `TCPTransport._addedDataToIncoming`, which handles a frame read whole: the tag is checked
  there first, so that a frame that fails is dropped with a warning naming its sender's address,
  answered with the data-error acknowledgement (a Brain process with another secret then stops
  at once instead of retrying), and its connection closed.

It protects against running code through the actor ports by anyone who cannot read the secret.
It does not hide what is sent (anyone who can watch the traffic can read it) and does not stop a
process that receives a signed frame from sending it again (docs/thespian-patches.md, 9).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import pickle
import time
from typing import Any

from thespian.system.transport import TCPTransport as tcp
from thespian.system.transport import streamBuffer

from brain.actors.thespian.fit import patch_once

TAG_BYTES = hashlib.sha256().digest_size
WARN_EVERY_SECS = 60.0
"""At most one warning per sender's host and this period; the rest are counted in the next."""
_MAX_WARNED_HOSTS = 1024

log = logging.getLogger(__name__)

_secret: bytes | None = None
_last_warnings: dict[str, tuple[float, int]] = {}


def sign(secret: bytes, payload: bytes) -> bytes:
    """A frame body: the HMAC-SHA256 of `payload` keyed by `secret`, then `payload`."""
    return hmac.digest(secret, payload, "sha256") + payload


def verified_payload(secret: bytes | None, body: bytes) -> memoryview | None:
    """The payload of `body` when its tag is the HMAC of the rest keyed by `secret`, else None.

    The tags are compared in constant time (`hmac.compare_digest`), so a forger learns nothing
    from how long the refusal took. Without a secret nothing verifies.
    """
    if secret is None or len(body) < TAG_BYTES:
        return None
    view = memoryview(body)
    payload = view[TAG_BYTES:]
    if not hmac.compare_digest(hmac.digest(secret, payload, "sha256"), view[:TAG_BYTES]):
        return None
    return payload


class SignedPickle:
    """What Thespian's TCP transport serializes with in place of the `pickle` module."""

    @staticmethod
    def dumps(message: Any) -> bytes:
        if _secret is None:
            raise RuntimeError("no actor secret: authenticate_actor_messages() first")
        return sign(_secret, pickle.dumps(message))

    @staticmethod
    def loads(body: bytes) -> Any:
        payload = verified_payload(_secret, body)
        if payload is None:
            warn_dropped("a reply to a message this process sent", "replies")
            return streamBuffer.ackDataErrPacket
        return pickle.loads(payload)


def _unpickle_checked(body: bytes) -> Any:
    """Unpickle a frame whose tag `_check_whole_frames` has just checked (once is enough)."""
    return pickle.loads(memoryview(body)[TAG_BYTES:])


def warn_dropped(what: str, source: str) -> None:
    """Log a dropped frame at WARNING, at most once per `source` (a sender's host, or
    "replies") and WARN_EVERY_SECS: a flood of forged frames must not flood the log."""
    now = time.monotonic()
    last, unsaid = _last_warnings.get(source, (None, 0))
    if last is not None and now - last < WARN_EVERY_SECS:
        _last_warnings[source] = (last, unsaid + 1)
        return
    if len(_last_warnings) >= _MAX_WARNED_HOSTS:
        _last_warnings.clear()
    _last_warnings[source] = (now, 0)
    log.warning("dropped %s unread: not signed with this server's actor secret "
                "(BRAIN_ACTOR_SECRET_FILE, or actor.secret in the data dir); connection "
                "closed%s", what, f" ({unsaid} more dropped since the last warning)" if unsaid
                else "")


def _sender(sock: Any) -> str:
    try:
        return str(sock.getpeername()[0])
    except (OSError, AttributeError, IndexError):
        return "an unknown address"


def _check_whole_frames(original: Any) -> Any:
    """Thespian's `TCPTransport._addedDataToIncoming` (`original`), checking a whole frame's
    tag before Thespian unpickles it."""

    @functools.wraps(original)
    def added_data(self: Any, inc: Any, skipFinish: bool = False,
                   has_exclusive_flag: bool = False) -> Any:
        if inc.receivedAllData():
            frame = inc._rData
            whole = frame._size is not None and frame._blen == frame._size
            if not whole or verified_payload(_secret, frame._buf) is None:
                sender = _sender(inc.socket)
                warn_dropped(f"a message from {sender}", sender)
                try:
                    inc.socket.send(tcp.ackDataErrMsg)
                except Exception:  # noqa: BLE001 - a courtesy; the connection closes anyway
                    pass
                inc.close()
                return None
            frame._deserialize = _unpickle_checked
        return original(self, inc, skipFinish, has_exclusive_flag)

    return added_data


@patch_once("thespian_auth")
def _sign_thespian_frames() -> None:
    tcp.serializer = SignedPickle
    tcp.TCPTransport._addedDataToIncoming = _check_whole_frames(
        tcp.TCPTransport._addedDataToIncoming)


def authenticate_actor_messages(secret: bytes) -> None:
    """Sign and check every Thespian frame of this process (and of its forks) with `secret`.

    Call it before the process's first ActorSystem call, after confine_thespian: the boot
    process before its admin forks, a web worker before it connects. A second call with
    another secret raises: frames of one process are signed with one key.
    Raises ThespianMismatch, patching nothing, unless Thespian is the one this was written for.
    """
    global _secret
    if _secret is not None:
        if not hmac.compare_digest(_secret, secret):
            raise RuntimeError("Thespian frames are already signed with another actor secret")
        return
    _sign_thespian_frames()
    _secret = bytes(secret)
    tcp.ackMsg = streamBuffer.toSendBuffer(streamBuffer.ackPacket, SignedPickle.dumps)
    tcp.ackDataErrMsg = streamBuffer.toSendBuffer(streamBuffer.ackDataErrPacket,
                                                  SignedPickle.dumps)
