"""Which TCP sockets a set of processes listens on, read from /proc (no traffic sent)."""

from __future__ import annotations

import os
import socket
import struct

LISTEN_STATE = "0A"


def _listening_inodes(table: str) -> dict[int, tuple[str, int]]:
    found: dict[int, tuple[str, int]] = {}
    try:
        with open(table) as f:
            next(f)
            for line in f:
                parts = line.split()
                local, state, inode = parts[1], parts[3], int(parts[9])
                if state != LISTEN_STATE:
                    continue
                hex_addr, hex_port = local.split(":")
                if len(hex_addr) == 8:
                    addr = socket.inet_ntoa(struct.pack("<I", int(hex_addr, 16)))
                else:
                    raw = bytes.fromhex(hex_addr)
                    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                    addr = socket.inet_ntop(socket.AF_INET6, words)
                found[inode] = (addr, int(hex_port, 16))
    except FileNotFoundError:
        pass
    return found


def listening_sockets(pids: list[int]) -> list[tuple[int, str, int]]:
    """(pid, address, port) for every TCP socket in LISTEN state owned by one of `pids`."""
    tables = {**_listening_inodes("/proc/net/tcp"), **_listening_inodes("/proc/net/tcp6")}
    result = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inode = int(target[8:-1])
                if inode in tables:
                    result.append((pid, *tables[inode]))
    return result


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
