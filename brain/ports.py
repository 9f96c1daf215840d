"""Whether a TCP port can be bound, checked before any process is started to bind it.

`brain serve` asks this about the HTTP port and an explicitly set actor port, so that a taken
port is one clear line and exit code 2 at once, instead of a child retrying, failing later, or
(for the actor port) joining whatever already listens there.
"""

from __future__ import annotations

import socket


def bare_host(host: str) -> str:
    """`[::1]` as written in HOST:PORT becomes `::1`, as socket calls want it."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def local_host(bind_host: str) -> str:
    """An address that reaches a socket bound to `bind_host` from this machine."""
    host = bare_host(bind_host)
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def port_is_free(host: str, port: int) -> bool:
    """True when `port` can be bound on `host` now (SO_REUSEADDR, as gunicorn and Thespian use).

    A port in TIME_WAIT counts as free, as it does for the servers that will bind it; a port
    somebody listens on does not.
    """
    try:
        infos = socket.getaddrinfo(bare_host(host) or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return True  # not ours to judge: the server's own bind reports a bad host
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError:
            return False
    return True


def free_port(host: str) -> int:
    """A port the kernel says is free on `host` now, for a server about to bind it."""
    family = socket.AF_INET6 if ":" in bare_host(host) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((bare_host(host), 0))
        return probe.getsockname()[1]
