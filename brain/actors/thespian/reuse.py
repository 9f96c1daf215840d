"""Let Thespian 4.0.1 reuse its TCP connections without losing or stalling a message.

With socket reuse on, Thespian keeps at most one idle connection per peer on each side. Two
actors that send to each other at once can each open a connection (one side starts a send while
the connection the other opened is still being read); when each transmit ends, each side keeps
its own connection as the peer's idle socket and shuts down the other, which the peer just kept.
The peer's next message to that address is then written into a connection that is closed (or
closing) at the far end:

- the wait for the acknowledgement reads end-of-file or a reset, and Thespian retries the
  transmit only after `attempts x 35 s` (TRANSMIT_RETRY_PERIOD), silently: the turn waiting for
  that message hangs for 35 s;
- a send that meets EPIPE is taken for a refused connection, the message declared for a dead
  target and dropped.

The message never reached the peer's actor in either case: a peer acknowledges a message as soon
as it has read all of it, before it can close that connection, and a peer only shuts down a
connection it holds as idle. So the fix, patched into the transport, is:

1. before reusing an idle connection, peek at it; one the peer has already closed is dropped
   and a fresh connection opened instead (no write into a dead socket);
2. a transmit on a reused connection that fails before its acknowledgement (end-of-file, reset,
   EPIPE) is sent again at once on a fresh connection instead of in 35 s or never; at most
   FRESH_RETRIES times per message, after which Thespian's own retry takes over.

Messages to one target stay in order: the other messages to it wait (Thespian allows one
transmit per target at a time) while this one reconnects within the same call.
"""

from __future__ import annotations

import errno
import functools
import logging
import socket
from typing import Any

from thespian.system.transport import SendStatus
from thespian.system.transport import TCPTransport as tcp
from thespian.system.utilis import thesplog

from brain.actors.thespian.fit import patch_once

FRESH_RETRIES = 3
_CLOSED_ERRNOS = (errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN, errno.EBADF)


def closed_by_peer(sock: socket.socket) -> bool:
    """True when the far end has closed this idle connection (end-of-file or reset pending)."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False  # open and quiet: the normal idle connection
    except OSError as exc:
        return exc.errno in _CLOSED_ERRNOS


@patch_once("thespian_reuse")
def patch_idle_socket_reuse() -> None:
    """Patch Thespian's TCPTransport as the module docstring says."""
    transport = tcp.TCPTransport
    connect_or_take_idle = transport._next_XMIT_1
    retry_later = transport._next_XMIT_6
    finish = transport._finishIntent

    @functools.wraps(connect_or_take_idle)
    def start_transmit(self: Any, intent: Any) -> bool:
        open_sockets = getattr(self, "_openSockets", None)
        reused = False
        if open_sockets is not None:
            key = tcp.opsKey(intent.targetAddr)
            idle = open_sockets.get(key)
            if idle is not None and closed_by_peer(idle.socket):
                del open_sockets[key]
                tcp._safeSocketShutdown(idle)
            reused = key in open_sockets
        intent.brain_reused_socket = reused
        return connect_or_take_idle(self, intent)

    @functools.wraps(retry_later)
    def retry(self: Any, intent: Any) -> bool:
        tries = getattr(intent, "brain_fresh_retries", 0)
        if not getattr(intent, "brain_reused_socket", False) or tries >= FRESH_RETRIES:
            return retry_later(self, intent)
        intent.brain_fresh_retries = tries + 1
        thesplog("reused connection to %s failed before its ack; resending on a fresh one",
                 intent.targetAddr, level=logging.INFO)
        intent.brain_reused_socket = False
        if hasattr(intent, "socket"):
            tcp._safeSocketShutdown(intent)
            delattr(intent, "socket")
        for attr in ("ackbuf", "_pauseUntil", "_lastPauseLength"):
            if hasattr(intent, attr):
                delattr(intent, attr)
        intent.stage = self._XMITStepSendConnect
        return self._nextTransmitStep(intent)

    @functools.wraps(finish)
    def finish_intent(self: Any, intent: Any, status: Any = SendStatus.Sent) -> bool:
        # EPIPE on a reused connection is the peer's idle close, not a dead target.
        if status == SendStatus.DeadTarget and getattr(intent, "brain_reused_socket", False) \
                and hasattr(intent, "socket"):
            intent.stage = self._XMITStepRetry
            return self._nextTransmitStep(intent)
        return finish(self, intent, status)

    transport._next_XMIT_1 = start_transmit
    transport._next_XMIT_6 = retry
    transport._finishIntent = finish_intent
