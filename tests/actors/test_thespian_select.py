"""The one-shot poll selector Thespian's loop uses in actor processes answers as epoll did."""

from __future__ import annotations

import errno
import os
import selectors
import socket
import time

import pytest

from brain.actors.thespian.poll import OneShotPoll
from tests.support.thespian_scenarios import run_scenario


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


def test_unpatched_thespian_makes_an_epoll_set_per_pass_of_its_loop() -> None:
    """The symptom (docs/thespian-patches.md): twenty messages, a new epoll set (epoll_create1,
    an epoll_ctl per socket, close) at every pass of each transport's loop."""
    seen = run_scenario("select", patched=False)
    assert seen["arrived"] == 20
    assert seen["epoll_sets"] >= 20


def test_with_the_patch_the_loop_makes_no_epoll_set() -> None:
    seen = run_scenario("select", patched=True)
    assert seen == {"arrived": 20, "epoll_sets": 0}
