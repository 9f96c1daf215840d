"""Warm session actors (brain/actors/registry/pool.py): turns are served by actors forked before the
request, a released actor keeps nothing of its session, actors are recycled, and a pooled actor
that dies is replaced. Processes are told apart from outside, by their `ps` title and /proc."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.guests import example_guest
from tests.support.server import (
    BrainServer,
    configured,
    group_pids,
    wait_for_no_open_session_actor,
)
from tests.support.waiting import wait_for

POOLED = b"brain: pooled session"
SESSION = b"brain: session"
TURN_SECS = 4
SLOW_MODEL_MS = 3000


def titled(server: BrainServer, prefix: bytes) -> set[int]:
    """Pids of the server's processes whose title starts with `prefix`."""
    pids = set()
    for pid in group_pids(server.proc.pid):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(prefix):
                pids.add(pid)
        except OSError:
            continue
    return pids


def open_files(pid: int) -> list[str]:
    paths = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            paths.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    return paths


def pooled_server(tmp_path: Path, size: int, sessions_per_actor: int) -> BrainServer:
    counter = tmp_path / "counter.wasm"
    counter.write_bytes(example_guest("turn_counter").read_bytes())
    return configured(tmp_path, f'[agentloops.counter]\npath = "{counter}"\n',
                      {"BRAIN_SESSION_POOL_SIZE": str(size),
                       "BRAIN_SESSION_ACTOR_SESSIONS": str(sessions_per_actor)})


@pytest.fixture
def one_actor(tmp_path: Path) -> Iterator[BrainServer]:
    """A pool of one actor that is never recycled: every session is served by that process."""
    server = pooled_server(tmp_path, 1, 0)
    try:
        yield server.start()
    finally:
        server.kill()


def test_turns_are_served_by_actors_forked_before_the_request(brain_server: BrainServer) -> None:
    s = brain_server
    pooled = titled(s, POOLED)
    assert len(pooled) == 8, "the default pool is forked before the server is ready"
    resident = s.create_session(idle_ttl_ms=0)["id"]
    serving = titled(s, f"brain: session {resident}".encode())
    assert len(serving) == 1 and serving <= pooled  # handed out, not forked for the create
    released = s.create_session()["id"]
    for turn in range(5):
        assert s.send(released, f"turn {turn}")["status"] == "ended"
    assert s.send(resident, "resident turn")["status"] == "ended"
    # Forks since the first create are refills in the background (after the resident session
    # took an actor for good, and perhaps during a slow turn), not one per open.
    actors = titled(s, POOLED) | titled(s, SESSION)
    assert len(actors - pooled) <= 2, (pooled, actors)


def test_a_released_actor_keeps_nothing_of_its_session(one_actor: BrainServer) -> None:
    s = one_actor
    # Retained for a moment after each turn, so the actor serving it can be seen by its title.
    first = s.create_session(agentloop="counter", environments=["local"], idle_ttl_ms=1500)["id"]
    for _ in range(3):
        result = s.send(first, "secret of the first session")
    assert result["status"] == "ended" and result["output"].startswith("#3:"), result
    (actor,) = titled(s, f"brain: session {first}".encode())
    # Released: the same process waits in the pool, titled as such, with no session file open.
    wait_for(lambda: actor in titled(s, POOLED), timeout=10, what="the actor back in the pool")
    # and the registry told so (brain/actors/session/release_report.py)
    wait_for_no_open_session_actor(s)
    held = [p for p in open_files(actor)
            if p.startswith((str(s.data_dir / "sessions"), str(s.data_dir / "environments")))]
    assert held == []
    # The actor that came back last is the next one handed out.
    second = s.create_session(agentloop="counter", idle_ttl_ms=0)["id"]
    assert titled(s, f"brain: session {second}".encode()) == {actor}
    result = s.send(second, "hello")
    assert result["status"] == "ended" and result["output"].startswith("#1:"), result  # kv
    transcript = s.request("GET", f"/v1/sessions/{second}/transcript").json()
    assert "secret of the first session" not in json.dumps(transcript)
    kinds = [e["kind"] for e in s.events(second)]
    assert not any(kind.startswith("environment_op") for kind in kinds), kinds
    assert s.send(first, "back again")["output"].startswith("#4:")  # the first is intact


def test_an_actor_is_recycled_after_its_sessions(tmp_path: Path) -> None:
    server = pooled_server(tmp_path, 1, 2).start()
    try:
        (first_actor,) = titled(server, POOLED)
        sid = server.create_session()["id"]  # the actor's first session (an open and release)
        assert server.send(sid, "turn")["status"] == "ended"  # its second: then it retires
        wait_for(lambda: first_actor not in group_pids(server.proc.pid), timeout=10,
                 what="the recycled actor to exit")
        wait_for(lambda: len(titled(server, POOLED)) == 1, timeout=10, what="a fresh actor")
        assert first_actor not in titled(server, POOLED)
        assert server.send(sid, "turn")["status"] == "ended"
    finally:
        server.kill()


def test_a_pooled_actor_that_dies_is_replaced(brain_server: BrainServer) -> None:
    s = brain_server
    before = titled(s, POOLED)
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: len(titled(s, POOLED)) == len(before) and victim not in titled(s, POOLED),
             timeout=10, what="the pool refilled")
    sid = s.create_session()["id"]
    assert s.send(sid, "after a pooled actor died")["status"] == "ended"


def test_a_timer_of_a_released_session_never_reaches_the_next(tmp_path: Path) -> None:
    """Thespian timers cannot be cancelled: the first session's turn deadline still fires in
    the actor after it serves the second session, whose turn has the same number."""
    server = configured(tmp_path, '[models.slow]\nprovider = "scripted"\n'
                        f'script = [ {{ text = "late", delay_ms = {SLOW_MODEL_MS} }} ]\n',
                        {"BRAIN_SESSION_POOL_SIZE": "1", "BRAIN_SESSION_ACTOR_SESSIONS": "0",
                         "BRAIN_MAX_TURN_SECS": str(TURN_SECS)}).start()
    try:
        first = server.create_session(idle_ttl_ms=300)["id"]
        first_turn_at = time.monotonic()
        assert server.send(first, "quick")["status"] == "ended"  # its deadline timer stays armed
        (actor,) = titled(server, f"brain: session {first}".encode())
        wait_for(lambda: actor in titled(server, POOLED), timeout=10, what="the release")
        time.sleep(max(0.0, first_turn_at + TURN_SECS / 2 - time.monotonic()))
        second = server.create_session(model="slow", idle_ttl_ms=0)["id"]
        assert titled(server, f"brain: session {second}".encode()) == {actor}
        # Its model answers within its own deadline, but after the first turn's would fire.
        result = server.send(second, "wait for the slow model")
        assert result["status"] == "ended", result
    finally:
        server.kill()


def test_without_a_pool_each_open_forks_an_actor_that_exits_on_release(tmp_path: Path) -> None:
    server = BrainServer(tmp_path / "data", env={"BRAIN_SESSION_POOL_SIZE": "0"}).start()
    try:
        assert titled(server, POOLED) == set()
        sid = server.create_session()["id"]
        assert server.send(sid, "turn")["status"] == "ended"
        # The released actor exits: nothing is kept warm.
        wait_for(lambda: not titled(server, SESSION) | titled(server, POOLED), timeout=10,
                 what="the actor's exit")
        assert server.send(sid, "again")["status"] == "ended"
    finally:
        server.kill()


def niceness(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return int(stat[stat.rindex(b")") + 2:].split()[16])  # field 19, after "pid (comm) "


def test_session_actors_yield_the_cpus_to_the_processes_that_answer(
        brain_server: BrainServer) -> None:
    s = brain_server
    sid = s.create_session()["id"]
    assert s.send(sid, "hello")["status"] == "ended"
    base = os.getpriority(os.PRIO_PROCESS, 0)  # this test's own, which the server inherits
    actors = titled(s, POOLED) | titled(s, SESSION)
    assert actors and {niceness(pid) for pid in actors} == {base + 5}  # the default
    others = titled(s, b"brain: registry") | titled(s, b"gunicorn: worker") \
        | titled(s, b"brain: model executor")
    assert len(others) >= 3 and {niceness(pid) for pid in others} == {base}
