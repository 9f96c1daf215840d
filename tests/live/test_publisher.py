"""Publishers hint exactly the workers that follow a session, as the markers say, read anew for
every hint."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from brain.live.followers import (
    clear_followers,
    follower_sockets,
    forget_follower,
    live_dir,
    mark_following,
)
from brain.live.publisher import LivePublisher


def worker_socket(data_dir: Path, name: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(live_dir(data_dir) / f"{name}.sock"))
    sock.settimeout(0.5)
    return sock


def received(sock: socket.socket) -> list[dict]:
    out = []
    sock.settimeout(0.2)
    while True:
        try:
            out.append(json.loads(sock.recv(65536)))
        except TimeoutError:
            return out


@pytest.fixture
def publisher(tmp_path: Path):
    live_dir(tmp_path).mkdir(parents=True)
    publisher = LivePublisher(tmp_path)
    yield publisher
    publisher.close()


def test_a_session_nobody_follows_is_hinted_to_no_worker(tmp_path: Path, publisher) -> None:
    w1 = worker_socket(tmp_path, "w1")
    publisher.committed("s1", 3)
    publisher.model_delta("s1", 2, "hello")
    assert received(w1) == []
    w1.close()


def test_only_the_following_worker_gets_the_hints_of_its_session(tmp_path: Path,
                                                                  publisher) -> None:
    live = live_dir(tmp_path)
    w1, w2 = worker_socket(tmp_path, "w1"), worker_socket(tmp_path, "w2")
    mark_following(live, "s1", "w1.sock")
    mark_following(live, "s2", "w2.sock")
    publisher.committed("s1", 3)
    publisher.model_delta("s2", 4, "two")
    assert received(w1) == [{"s": "s1", "q": 3}]
    assert received(w2) == [{"s": "s2", "d": {"started": 4, "delta": "two"}}]
    w1.close()
    w2.close()


def test_a_worker_that_starts_following_between_two_hints_gets_the_second(
        tmp_path: Path, publisher) -> None:
    live = live_dir(tmp_path)
    w1, late = worker_socket(tmp_path, "w1"), worker_socket(tmp_path, "late")
    mark_following(live, "s1", "w1.sock")
    publisher.model_delta("s1", 5, "one")
    mark_following(live, "s1", "late.sock")
    publisher.model_delta("s1", 5, "two")
    assert [m["d"]["delta"] for m in received(w1)] == ["one", "two"]
    assert [m["d"]["delta"] for m in received(late)] == ["two"]
    forget_follower(live, "s1", "w1.sock")
    publisher.committed("s1", 9)
    assert received(w1) == []
    assert received(late) == [{"s": "s1", "q": 9}]
    w1.close()
    late.close()


def test_a_dead_workers_marker_goes_with_its_first_missed_hint(tmp_path: Path,
                                                               publisher) -> None:
    live = live_dir(tmp_path)
    mark_following(live, "s1", "gone.sock")  # its socket was never bound (a killed worker)
    alive = worker_socket(tmp_path, "alive")
    mark_following(live, "s1", "alive.sock")
    publisher.committed("s1", 1)
    assert follower_sockets(live, "s1") == ["alive.sock"]
    assert received(alive) == [{"s": "s1", "q": 1}]
    forget_follower(live, "s1", "alive.sock")
    assert not (live / "follow" / "s1").exists()  # the last marker takes the directory along
    alive.close()


def test_markers_of_the_last_run_are_cleared_and_odd_ids_are_never_paths(tmp_path: Path) -> None:
    live = live_dir(tmp_path)
    mark_following(live, "s1", "w1.sock")
    clear_followers(live)
    assert follower_sockets(live, "s1") == []
    for odd in ("", ".", "..", "a/b"):
        mark_following(live, odd, "w1.sock")
        assert follower_sockets(live, odd) == []
    assert not (live / "follow").exists()
