"""A long-lived publisher reaches a web worker that bound its socket after the last scan."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from brain.live.publisher import LivePublisher, live_dir


def worker_socket(data_dir: Path, name: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(live_dir(data_dir) / f"{name}.sock"))
    sock.settimeout(2.0)
    return sock


def test_a_worker_that_binds_after_a_scan_gets_the_next_delta(tmp_path: Path) -> None:
    live_dir(tmp_path).mkdir(parents=True)
    first = worker_socket(tmp_path, "w1")
    publisher = LivePublisher(tmp_path)
    try:
        publisher.model_delta("s1", 5, "one")  # scans: only w1 exists
        assert json.loads(first.recv(65536))["d"]["delta"] == "one"
        late = worker_socket(tmp_path, "w2")  # a worker that booted later, well within a second
        publisher.model_delta("s1", 5, "two")
        assert json.loads(late.recv(65536))["d"]["delta"] == "two"
        assert json.loads(first.recv(65536))["d"]["delta"] == "two"
        late.close()
    finally:
        publisher.close()
        first.close()
