"""Forked actor processes let go of the listening sockets they inherit.

Thespian forks the actor-system admin from the boot process and every actor from the admin.
A fork copies every open descriptor, so each actor process held the boot process's listening
socket (its endpoint for asking the admin) and the admin's: 18 processes kept a port open that
none of them ever accepted on. A connection to that port was then taken by the kernel into a
backlog nobody read, and the port stayed open until the last actor had exited.

Right after each fork, in the child, every inherited listening TCP socket is pointed at
/dev/null instead (`dup2`). Not closed: the child still holds the parent's Python socket objects,
and when one of them is collected it closes its descriptor number; after a close that number may
already belong to one of the child's own sockets. A child makes its own listening socket only
after the fork, so nothing it needs is touched.
"""

from __future__ import annotations

import os
import socket

from brain.fds import close_fd

_installed = False


def listening_descriptors() -> list[int]:
    """This process's descriptors that are listening TCP sockets."""
    found = []
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for name in names:
        fd = int(name)
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            probe = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            if probe.family in (socket.AF_INET, socket.AF_INET6) and probe.getsockopt(
                    socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                found.append(fd)
        except OSError:
            pass
        finally:
            probe.close()
    return found


def _let_go_in_child() -> None:
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    try:
        for fd in listening_descriptors():
            os.dup2(null, fd, inheritable=False)
    finally:
        close_fd(null)


def let_go_of_inherited_listeners() -> None:
    """From now on every fork of this process (and of its forks) drops inherited listeners."""
    global _installed
    if not _installed:
        os.register_at_fork(after_in_child=_let_go_in_child)
        _installed = True
