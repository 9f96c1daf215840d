"""Two Brains on one host: each actor system belongs to exactly one data dir.

A second `brain serve` that reached the first one's Thespian admin used to write its sessions
into the first one's data dir. These tests run real servers side by side and check that each
keeps to its own data dir, that a taken or foreign actor port is refused, and that a server
whose actor system dies stops instead of serving HTTP over nothing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brain.processes import listening_sockets
from tests.support.server import BrainServer, free_port, group_pids
from tests.support.waiting import wait_for

AUTO_ACTOR_PORT = {"BRAIN_ACTOR_PORT": ""}  # unset: the server picks its own


def actor_record(server: BrainServer) -> dict:
    return json.loads((server.data_dir / "run" / "actor.json").read_text())


def listed_ids(server: BrainServer) -> set[str]:
    resp = server.request("GET", "/v1/sessions")
    assert resp.status_code == 200, resp.text
    return {s["id"] for s in resp.json()["sessions"]}


def on_disk(server: BrainServer) -> set[str]:
    root = server.data_dir / "sessions"
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def test_two_servers_on_default_actor_port_keep_to_their_own_data_dirs(tmp_path: Path) -> None:
    first = BrainServer(tmp_path / "one" / "data", env=AUTO_ACTOR_PORT)
    second = BrainServer(tmp_path / "two" / "data", env=AUTO_ACTOR_PORT)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    try:
        first.start()
        second.start()
        one = first.create_session()["id"]
        two = second.create_session()["id"]
        assert first.send(one, "hello one")["status"] == "ended"
        assert second.send(two, "hello two")["status"] == "ended"
        assert on_disk(first) == {one} and on_disk(second) == {two}
        assert listed_ids(first) == {one} and listed_ids(second) == {two}
        ports = actor_record(first)["actor_port"], actor_record(second)["actor_port"]
        assert ports[0] != ports[1], ports

        assert second.stop() == []
        assert second.proc is None
        assert first.request("GET", "/readyz").status_code == 200
        again = first.create_session()["id"]
        assert first.send(again, "still here")["status"] == "ended"
        assert listed_ids(first) == {one, again}
        assert on_disk(second) == {two}
    finally:
        first.kill()
        second.kill()


def run_serve(data_dir: Path, env: dict[str, str], timeout: float = 20.0
              ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    base.update({"BRAIN_DATA_DIR": str(data_dir), "BRAIN_API_TOKEN": "t",
                 "BRAIN_LISTEN": f"127.0.0.1:{free_port()}"})
    base.update(env)
    return subprocess.run([sys.executable, "-m", "brain.cli", "serve"], env=base,
                          capture_output=True, text=True, timeout=timeout,
                          start_new_session=True)


def test_explicit_actor_port_that_is_taken_exits_2_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        started = time.monotonic()
        done = run_serve(tmp_path / "data", {"BRAIN_ACTOR_PORT": str(port)})
    assert done.returncode == 2, done
    assert time.monotonic() - started < 10
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(port) in lines[0], done.stderr
    assert "Brain serving" not in done.stdout


def test_another_brains_actor_port_is_never_joined(tmp_path: Path, brain_server: BrainServer
                                                   ) -> None:
    theirs = brain_server.create_session()["id"]
    done = run_serve(tmp_path / "mine", {"BRAIN_ACTOR_PORT": str(brain_server.actor_port)})
    assert done.returncode == 2, done
    assert str(brain_server.actor_port) in done.stderr
    assert not (tmp_path / "mine" / "sessions").exists() or \
        not any((tmp_path / "mine" / "sessions").iterdir())
    assert listed_ids(brain_server) == {theirs}
    assert brain_server.send(theirs, "untouched")["status"] == "ended"


def boot_env(data_dir: Path, actor_port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env.update({"BRAIN_DATA_DIR": str(data_dir), "BRAIN_ACTOR_PORT": str(actor_port),
                "BRAIN_BOOT_ID": "intruder"})
    return env


def test_boot_process_refuses_the_admin_of_another_data_dir(tmp_path: Path,
                                                            brain_server: BrainServer) -> None:
    """Even past the supervisor's port check (a race), boot must not adopt a foreign admin."""
    boot = subprocess.run([sys.executable, "-m", "brain.actors.system.boot"],
                          env=boot_env(tmp_path / "other", brain_server.actor_port),
                          capture_output=True, text=True, timeout=60)
    assert boot.returncode != 0, boot
    assert "ready" not in boot.stdout
    assert str(brain_server.actor_port) in boot.stderr
    # The foreign admin was left alone: it was not shut down and still serves its own Brain.
    assert brain_server.request("GET", "/readyz").status_code == 200
    sid = brain_server.create_session()["id"]
    assert brain_server.send(sid, "still mine")["status"] == "ended"


GATEWAY_PROBE = """
import sys
from brain import errors
from brain.settings import Settings
from brain.web.gateway import ActorGateway
gateway = ActorGateway(Settings.from_env())
print("ping", gateway.ping())
try:
    gateway.request("01ARZ3NDEKTSV4RRFFQ69G5FAV", None, 5.0)
except errors.BrainError as exc:
    print("refused", exc)
"""


@pytest.mark.parametrize("own_secret", [False, True])
def test_web_gateway_refuses_the_admin_of_another_data_dir(tmp_path: Path,
                                                           brain_server: BrainServer,
                                                           own_secret: bool) -> None:
    """A web worker of another data dir never uses this admin: without an actor secret of its
    own it does not even try; with one, its frames carry another key, so the admin drops them
    unread and never answers with its identity."""
    other = tmp_path / "other"
    if own_secret:
        other.mkdir(mode=0o700)
        (other / "actor.secret").write_bytes(os.urandom(32))
        (other / "actor.secret").chmod(0o600)
    probe = subprocess.run([sys.executable, "-c", GATEWAY_PROBE],
                           env=boot_env(other, brain_server.actor_port),
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe
    assert "ping False" in probe.stdout, probe.stdout
    assert "refused" in probe.stdout, probe.stdout
    if not own_secret:
        assert "actor secret" in probe.stdout, probe.stdout
    sid = brain_server.create_session()["id"]
    assert brain_server.send(sid, "still mine")["status"] == "ended"


def test_sigkill_of_the_actor_admin_stops_brain_serve(tmp_path: Path) -> None:
    server = BrainServer(tmp_path / "data").start()
    try:
        port = server.actor_port
        pgid = server.proc.pid
        admins = [pid for pid, _, p in listening_sockets(group_pids(pgid)) if p == port]
        assert admins, "no process listens on the actor port"
        for pid in set(admins):
            os.kill(pid, signal.SIGKILL)
        code = server.proc.wait(timeout=60)
        assert code != 0
        log = server.log()
        assert "actor system" in log and "stopping" in log, log
        wait_for(lambda: not group_pids(pgid), timeout=15, what="every process gone")
    finally:
        server.kill()


def test_a_worker_without_port_or_boot_id_finds_its_actor_system_in_run(
        brain_server: BrainServer) -> None:
    record = actor_record(brain_server)
    assert record["actor_port"] == brain_server.actor_port
    assert record["identity"].startswith(f"{brain_server.data_dir.resolve()} ")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env["BRAIN_DATA_DIR"] = str(brain_server.data_dir)
    probe = subprocess.run([sys.executable, "-c", GATEWAY_PROBE], env=env,
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe
    assert "ping True" in probe.stdout, probe.stdout


def test_second_server_on_the_same_data_dir_is_refused(brain_server: BrainServer) -> None:
    """Two servers on one data dir would share its journals, idempotency store and run files."""
    sid = brain_server.create_session()["id"]
    done = run_serve(brain_server.data_dir, AUTO_ACTOR_PORT)
    assert done.returncode == 2, done
    assert str(brain_server.data_dir) in done.stderr and "in use" in done.stderr, done.stderr
    assert "Brain serving" not in done.stdout
    assert actor_record(brain_server)["actor_port"] == brain_server.actor_port
    assert brain_server.send(sid, "still the only one")["status"] == "ended"


def test_boot_process_refuses_a_data_dir_held_by_another_boot(brain_server: BrainServer) -> None:
    """Past the supervisor's early check (a race), the boot process's lock is the authority."""
    boot = subprocess.run([sys.executable, "-m", "brain.actors.system.boot"],
                          env=boot_env(brain_server.data_dir, free_port()),
                          capture_output=True, text=True, timeout=60)
    assert boot.returncode != 0, boot
    assert "ready" not in boot.stdout
    assert "in use" in boot.stderr, boot.stderr
    assert brain_server.request("GET", "/readyz").status_code == 200
    sid = brain_server.create_session()["id"]
    assert brain_server.send(sid, "still served")["status"] == "ended"


def test_data_dir_is_free_again_right_after_a_sigkill(tmp_path: Path) -> None:
    """The lock dies with its process: a crashed server never blocks the next start."""
    server = BrainServer(tmp_path / "data").start()
    try:
        sid = server.create_session()["id"]
        server.kill()
        server.start()
        assert server.send(sid, "after the crash")["status"] == "ended"
    finally:
        server.kill()
