"""sd_notify: tell a service manager (systemd's Type=notify) that Brain is ready or stopping.

The web unit starts once the actor service says READY. A datagram to $NOTIFY_SOCKET (a leading
`@` is Linux's abstract namespace); without the variable (a terminal, a container, a unit of
another type) nothing is sent.
"""

from __future__ import annotations

import os
import socket
import sys


def notify_service_manager(state: str, command: str) -> None:
    """Send `state` (e.g. "READY=1"); a failure is reported under `brain {command}`, never
    fatal: the service manager's own timeout then says what is wrong."""
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return
    address = "\0" + path[1:] if path.startswith("@") else path
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(state.encode(), address)
    except OSError as exc:
        print(f"brain {command}: could not notify the service manager: {exc}", file=sys.stderr)
