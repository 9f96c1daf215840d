"""One poll(2) per turn of Thespian's loop instead of a new epoll set.

Thespian 4.0.1's TCP transport builds a fresh `selectors.DefaultSelector()` on every pass of
its loop (its own comment: "creates selector on each loop, perhaps this could be optimized"),
registers every socket it waits on, selects once and closes it. On Linux that is an epoll set:
`epoll_create1`, one `epoll_ctl` per socket, `epoll_wait`, `close`, and the selectors module's
bookkeeping per socket, on every message an actor sends or receives. With connections kept open
between messages (socket reuse) an actor waits on a socket per peer, so the cost grows with the
peers. Measured in the session actor's profile, the selector was ~10 % of its CPU per turn.

`OneShotPoll` does the same job for a set used once: one `poll` call with the list. It keeps
the behaviour Thespian relies on: a descriptor that is not open makes `select` raise
`OSError(EBADF)` (epoll raised it at registration; poll reports POLLNVAL), which Thespian
handles by dropping the bad watch; a hang-up or error reads as ready, as selectors reports it.

Only actor processes take it (`brain.actors.system.boot`, whose forks inherit it): a gevent web
worker
waits through gevent's own selector, which this must not replace.
"""

from __future__ import annotations

import errno
import math
import select
import selectors
import types
from typing import Any

from thespian.system.transport import TCPTransport as tcp

from brain.actors.thespian.fit import patch_once

_IN, _OUT = select.POLLIN, select.POLLOUT
_READY_READ = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
_READY_WRITE = select.POLLOUT | select.POLLHUP | select.POLLERR


class OneShotPoll:
    """The part of the selectors API Thespian's loop uses, for a selector used once."""

    __slots__ = ("_masks",)

    def __init__(self) -> None:
        self._masks: dict[int, int] = {}

    def register(self, fd: int, events: int, data: Any = None) -> None:
        mask = (_IN if events & selectors.EVENT_READ else 0) | \
            (_OUT if events & selectors.EVENT_WRITE else 0)
        self._masks[fd] = self._masks.get(fd, 0) | mask

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        poller = select.poll()
        for fd, mask in self._masks.items():
            poller.register(fd, mask)
        ms = None if timeout is None else max(0, math.ceil(timeout * 1000))
        ready = []
        for fd, revents in poller.poll(ms):
            if revents & select.POLLNVAL:
                raise OSError(errno.EBADF, f"descriptor {fd} is not open")
            events = (selectors.EVENT_READ if revents & _READY_READ else 0) | \
                (selectors.EVENT_WRITE if revents & _READY_WRITE else 0)
            events &= _as_events(self._masks[fd])  # asked for (a hang-up comes unasked)
            if events:
                ready.append((selectors.SelectorKey(fd, fd, events, None), events))
        return ready

    def close(self) -> None:
        self._masks.clear()


def _as_events(mask: int) -> int:
    return (selectors.EVENT_READ if mask & _IN else 0) | \
        (selectors.EVENT_WRITE if mask & _OUT else 0)


@patch_once("thespian_select")
def use_one_shot_poll() -> None:
    """Make Thespian's TCP transport in this process (and its forks) select with poll."""
    shim = types.ModuleType("selectors")
    shim.__dict__.update(selectors.__dict__)
    shim.DefaultSelector = OneShotPoll  # type: ignore[attr-defined]
    tcp.selectors = shim  # type: ignore[attr-defined]
