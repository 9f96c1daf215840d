"""Read a Thespian message in one `recv` instead of two passes of its loop, read its
acknowledgement the same way, and wait for that acknowledgement as soon as the message is sent.

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

The sending side had two more passes per message. The acknowledgement (`ACK`, framed the same
way) was read 20 bytes first, then the rest a pass later: its buffer now peeks as an incoming
message does. And a message sent whole went on to a step that only prepares the buffer for the
acknowledgement, but only after one more pass of the loop had found the socket writable; that
step now follows at once. Two passes of four per message and its acknowledgement: 15 % of the
CPU of a message between two actors (tools/bench/actor_messages.py).
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable
from typing import Any

from thespian.system.transport import TCPTransport as tcp
from thespian.system.transport.streamBuffer import ReceiveBuffer

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
        if buffer._size is None and not buffer._buf:
            length = _peeked_length(self.socket)
            if length is not None:
                return length
        return original(self)

    return remaining_size


def _left_to_thespian(sock: Any) -> bool:
    """A web worker's gevent socket in a member of several hosts (`read_messages_whole`)."""
    return _skip_gevent and type(sock).__module__.startswith("gevent")


def _peeked_length(sock: Any) -> int | None:
    """The whole length of the message waiting on `sock`, if its prefix has arrived; None
    without a socket or for one left to Thespian."""
    if sock is None or _left_to_thespian(sock):
        return None
    try:
        head = sock.recv(PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except OSError:
        return None
    return message_length(head)


class WholeAckBuffer(ReceiveBuffer):
    """The buffer an acknowledgement is read into: asks for the whole frame once its prefix has
    arrived, as an incoming message's buffer does, never for more."""

    def __init__(self, deserialize: Callable[[bytes], Any], sock: Any) -> None:
        super().__init__(deserialize)
        self._socket = sock

    def remainingAmount(self) -> int:  # noqa: N802 - Thespian's name
        if self._size is None and not self._buf:
            length = _peeked_length(self._socket)
            if length is not None:
                return length
        return super().remainingAmount()


def _ack_read_whole(original: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """Thespian's `TCPTransport._next_XMIT_3` (`original`), which makes the acknowledgement's
    buffer, giving it a `WholeAckBuffer` instead."""

    @functools.wraps(original)
    def next_xmit_3(self: Any, intent: Any) -> bool:
        waiting = original(self, intent)
        buffer = getattr(intent, "ackbuf", None)
        if type(buffer) is ReceiveBuffer and buffer.is_empty():
            intent.ackbuf = WholeAckBuffer(buffer._deserialize, getattr(intent, "socket", None))
        return waiting

    return next_xmit_3


def _await_ack_once_sent(original: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """Thespian's `TCPTransport._next_XMIT_2` (`original`), which sends the message's bytes,
    going on at once to the next step when they are all sent, instead of after a pass."""

    @functools.wraps(original)
    def next_xmit_2(self: Any, intent: Any) -> bool:
        waiting = original(self, intent)
        if waiting is True and intent.stage == self._XMITStepShutdownWrite \
                and not _left_to_thespian(getattr(intent, "socket", None)):
            return bool(self._nextTransmitStep(intent))
        return waiting

    return next_xmit_2


def read_messages_whole(skip_gevent: bool = False) -> None:
    """Patch Thespian's TCP transport in this process as the module docstring says.

    `skip_gevent`: leave gevent's sockets (a web worker's) to Thespian's own reading and
    stepping, acknowledgements included. In a member of several hosts, web workers with the
    peek failed, now and then, to have an actor created on another member
    (tests/e2e/test_several_hosts.py: 2 runs of 3 with the peek on gevent's socket, 1 of 6 with
    it on the socket gevent wraps; 0 of 16 with gevent's sockets left alone). The cause is not
    known; actors and admins there read messages whole and await acknowledgements at once.

    Raises ThespianMismatch, patching nothing, unless Thespian is the one this was written for.
    """
    global _patched, _skip_gevent
    if _patched:
        _skip_gevent = skip_gevent
        return
    check_thespian(["thespian_receive"])
    _skip_gevent = skip_gevent
    tcp.TCPIncoming_Common.remainingSize = _reading_whole(tcp.TCPIncoming_Common.remainingSize)
    tcp.TCPTransport._next_XMIT_2 = _await_ack_once_sent(tcp.TCPTransport._next_XMIT_2)
    tcp.TCPTransport._next_XMIT_3 = _ack_read_whole(tcp.TCPTransport._next_XMIT_3)
    _patched = True
