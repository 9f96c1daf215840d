"""The one-shot poll selector Thespian's loop uses in actor processes answers as epoll did."""

from __future__ import annotations

import errno
import os
import selectors
import socket
import time

import pytest

from brain.actors.thespian_select import OneShotPoll


def test_readable_and_writable_are_reported_as_asked() -> None:
    a, b = socket.socketpair()
    try:
        b.send(b"x")
        sel = OneShotPoll()
        sel.register(a.fileno(), selectors.EVENT_READ)
        sel.register(b.fileno(), selectors.EVENT_WRITE)
        ready = {key.fd: events for key, events in sel.select(1.0)}
        assert ready == {a.fileno(): selectors.EVENT_READ, b.fileno(): selectors.EVENT_WRITE}
        sel.close()
    finally:
        a.close()
        b.close()


def test_nothing_ready_waits_out_the_timeout() -> None:
    a, b = socket.socketpair()
    try:
        sel = OneShotPoll()
        sel.register(a.fileno(), selectors.EVENT_READ)
        began = time.monotonic()
        assert sel.select(0.05) == []
        assert time.monotonic() - began >= 0.04
    finally:
        a.close()
        b.close()


def test_a_hang_up_reads_as_readable() -> None:
    a, b = socket.socketpair()
    b.close()
    try:
        sel = OneShotPoll()
        sel.register(a.fileno(), selectors.EVENT_READ)
        [(key, events)] = sel.select(1.0)
        assert key.fd == a.fileno() and events == selectors.EVENT_READ
    finally:
        a.close()


def test_a_descriptor_that_is_not_open_raises_ebadf() -> None:
    """Thespian drops a bad watched descriptor on EBADF from its select (epoll raised it when
    the descriptor was registered)."""
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    sel = OneShotPoll()
    sel.register(r, selectors.EVENT_READ)
    with pytest.raises(OSError) as raised:
        sel.select(0.01)
    assert raised.value.errno == errno.EBADF
