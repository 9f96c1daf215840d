"""Read a Thespian message in one `recv` instead of two passes of its loop.

Thespian 4.0.1 frames each message as `<length>>` followed by the pickle. While it does not yet
know the length, its receive buffer asks for 20 bytes; so the first `recv` of every message
reads the length and a sliver of the pickle, and the rest waits for the next pass of the
transport's loop (a poll and its bookkeeping: ~30 µs of a ~170 µs one-way message on loopback).

Reading more than the message at once would be wrong: with socket reuse the same connection may
carry the peer's acknowledgement of a message this side sent, right after the message being
read, and bytes read past a message are mishandled by Thespian (its trailing-data branch
re-parses the decoded message instead of them). So the length is found with `MSG_PEEK`, which
consumes nothing, and exactly this message's bytes are asked for: all of it when it has arrived,
the rest on later passes, as Thespian reads it.
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable
from typing import Any

from thespian.system.transport import TCPTransport as tcp

from brain.actors.thespian.fit import check_thespian

PEEK_BYTES = 64  # a length prefix is at most ~12 bytes
_patched = False
_skip_gevent = False


def message_length(head: bytes) -> int | None:
    """Bytes of the whole message (prefix included) whose first bytes are `head`, or None
    while its length prefix has not arrived whole."""
    mark = head.find(b">")
    if mark <= 0:
        return None
    try:
        return mark + 1 + int(head[:mark])
    except ValueError:
        return None


def _reading_whole(original: Callable[[Any], int]) -> Callable[[Any], int]:
    """Thespian's `TCPIncoming_Common.remainingSize` (`original`), asking for the whole
    message once its length prefix has arrived."""

    @functools.wraps(original)
    def remaining_size(self: Any) -> int:
        buffer = self._rData
        sock = self.socket
        if _skip_gevent and type(sock).__module__.startswith("gevent"):
            return original(self)
        if buffer._size is None and not buffer._buf and sock is not None:
            try:
                head = sock.recv(PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except OSError:
                head = b""
            length = message_length(head)
            if length is not None:
                return length
        return original(self)

    return remaining_size


def read_messages_whole(skip_gevent: bool = False) -> None:
    """Patch Thespian's TCP transport in this process as the module docstring says.

    `skip_gevent`: leave gevent's sockets (a web worker's) to Thespian's own reading. In a
    member of several hosts, web workers with the patch failed, now and then, to have an actor
    created on another member (tests/e2e/test_several_hosts.py: 2 runs of 3 with the peek on
    gevent's socket, 1 of 6 with it on the socket gevent wraps; 0 of 16 with gevent's sockets
    left alone). The cause is not known; actors and admins there read messages whole.

    Raises ThespianMismatch, patching nothing, unless Thespian is the one this was written for.
    """
    global _patched, _skip_gevent
    if _patched:
        _skip_gevent = skip_gevent
        return
    check_thespian(["thespian_receive"])
    _skip_gevent = skip_gevent
    tcp.TCPIncoming_Common.remainingSize = _reading_whole(tcp.TCPIncoming_Common.remainingSize)
    _patched = True
