"""TCP connection state read from /proc (no traffic sent). Listening sockets are read by
`brain.processes.listening_sockets`, which the supervisor uses too."""

from __future__ import annotations


def unsent_bytes(local_port: int, remote_port: int) -> int:
    """Bytes queued for sending on the TCP connection local_port → remote_port (loopback)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    local, remote = parts[1], parts[2]
                    if (int(local.rsplit(":", 1)[1], 16) == local_port
                            and int(remote.rsplit(":", 1)[1], 16) == remote_port):
                        return int(parts[4].split(":")[0], 16)
        except FileNotFoundError:
            continue
    return 0
