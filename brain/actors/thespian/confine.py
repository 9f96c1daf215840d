"""Keep Thespian's sockets off the network (stack hazard 3), and its messages intact.

Thespian's admin and actors listen on every interface and exchange pickles: whoever reaches one
of those ports can run code. Thespian binds the address its `IPActorAddress` computes as
`('', port)`; this module makes that the configured bind address (loopback by default, or the
private interface of a multi-host convention). It must run in every process that opens a
Thespian transport before the first ActorSystem call: the boot process (whose forks inherit it)
and each web worker.

What of Thespian it replaces or relies on (`IPActorAddress.__init__`, the module's
`REUSE_SOCKETS` and `LISTEN_DEPTH`, `thisSystem`) is the `thespian_confine` entry of
brain/actors/thespian/fit.py, checked before anything is patched.
"""

from __future__ import annotations

import functools
import os

from thespian.system.transport import IPBase, TCPTransport

from brain.actors.thespian.fit import check_thespian
from brain.actors.thespian.receive import read_messages_whole
from brain.actors.thespian.reuse import patch_idle_socket_reuse

THESPIAN_LISTEN_DEPTH = 4096
"""Connects a Thespian listener queues (the kernel caps it at net.core.somaxconn)."""

_applied_to: str | None = None


def confine_thespian(bind_address: str, convention: bool = False) -> None:
    """Make every Thespian listening socket in this process bind to `bind_address`, and patch
    Thespian's transport (`convention`: this process is a member of several hosts').

    Raises ThespianMismatch, patching nothing, unless Thespian is the one this was written for.
    """
    global _applied_to
    if _applied_to is not None:
        if _applied_to != bind_address:
            raise RuntimeError(f"Thespian already confined to {_applied_to}")
        return
    check_thespian(["thespian_confine"])
    os.environ["THESPIAN_BASE_IPADDR"] = bind_address
    original_init = IPBase.IPActorAddress.__init__

    @functools.wraps(original_init)  # the fit check reads the replaced signature
    def confined_init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        original_init(self, *args, **kwargs)
        host, port = self.bindname[0], self.bindname[1]
        if host in ("", "0.0.0.0", "::"):
            self.bindname = (bind_address, port)

    IPBase.IPActorAddress.__init__ = confined_init
    # One TCP connection per peer, kept open between messages (Thespian's default), with the
    # patch that stops a message written into a connection the peer has just closed from being
    # dropped or stalled for 35 s (brain/actors/thespian/reuse.py).
    patch_idle_socket_reuse()
    TCPTransport.REUSE_SOCKETS = True
    # Thespian listens with a queue of 100: a fleet of waiting turns makes the registry and the
    # executors take connects from every web endpoint and actor at once, and a connect dropped
    # from a full queue is retried by the kernel after a second or more (a turn's p99).
    TCPTransport.LISTEN_DEPTH = THESPIAN_LISTEN_DEPTH
    # One recv per message, not two loop passes (brain/actors/thespian/receive.py); in a member of
    # several
    # hosts not on a web worker's gevent sockets, where it made creates on another member fail
    # now and then (the cause is not found yet).
    read_messages_whole(skip_gevent=convention)
    IPBase.thisSystem.add_local_addr(bind_address)
    _applied_to = bind_address
