"""`brain serve` starts, stops and names its processes as a user expects.

Real servers in their own process group: the serving line means the server answers, a taken
HTTP port is refused at once, Ctrl-C (SIGINT to the whole foreground group) stops as cleanly as
SIGTERM, no exited child is left unreaped, `ps` tells the actor processes apart, and a plain stop
logs no error.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from tests.support.server import BrainServer, free_port, group_pids
from tests.support.waiting import wait_for


def serve_env(data_dir: Path, listen_port: int) -> dict[str, str]:
    """A server on `listen_port`, with an actor port of its own (the default one may be held by
    another Brain on this machine)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env.update({"BRAIN_DATA_DIR": str(data_dir), "BRAIN_API_TOKEN": "t",
                "BRAIN_LISTEN": f"127.0.0.1:{listen_port}", "BRAIN_DRAIN_SECS": "5",
                "BRAIN_ACTOR_PORT": str(free_port())})
    return env


def test_serving_line_appears_only_once_the_server_answers(tmp_path: Path) -> None:
    for attempt in range(3):  # a port free when asked may be taken before Brain binds it
        port = free_port()
        stderr_path = tmp_path / f"stderr-{attempt}"
        with open(stderr_path, "w") as stderr:
            proc = subprocess.Popen([sys.executable, "-m", "brain.cli", "serve"],
                                    env=serve_env(tmp_path / "data", port),
                                    stdout=subprocess.PIPE, stderr=stderr, text=True,
                                    start_new_session=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # bounded: the finally below kills the group
            if not line and "already in use" in stderr_path.read_text() and attempt < 2:
                continue
            assert line.startswith(f"Brain serving on http://127.0.0.1:{port}"), \
                (line, stderr_path.read_text()[-3000:])
            health = requests.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
            assert health.status_code == 200
            return
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_taken_http_port_exits_2_at_once_naming_it(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "brain.cli", "serve"],
                              env=serve_env(tmp_path / "data", port), capture_output=True,
                              text=True, timeout=30, start_new_session=True)
        elapsed = time.monotonic() - started
    assert done.returncode == 2, done
    assert elapsed < 4.0, elapsed  # gunicorn alone retries for 5 s before giving up
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(port) in lines[0], done.stderr
    assert "Brain serving" not in done.stdout


def test_sigint_to_the_whole_group_stops_cleanly(tmp_path: Path) -> None:
    server = BrainServer(tmp_path / "data").start()
    try:
        sid = server.create_session(idle_ttl_ms=0)["id"]
        assert server.send(sid, "before ctrl-c")["status"] == "ended"
        pgid = server.proc.pid
        os.killpg(pgid, signal.SIGINT)  # what a terminal's Ctrl-C does
        code = server.proc.wait(timeout=60)
        wait_for(lambda: not group_pids(pgid), timeout=15, what="every process gone")
        log = server.log()
        assert code == 0, log
        assert "Traceback" not in log and "KeyboardInterrupt" not in log, log
    finally:
        server.kill()


def zombies(pgid: int) -> list[tuple[int, int]]:
    """(pid, parent pid) of every exited-but-unreaped process of the group."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == b"Z" and int(fields[2]) == pgid:
            found.append((int(entry), int(fields[1])))
    return found


def test_no_exited_child_is_left_unreaped(brain_server: BrainServer) -> None:
    pgid = brain_server.proc.pid
    # A zombie that is reaped soon is normal; one that stays is a leak.
    wait_for(lambda: not zombies(pgid), timeout=5, what="no <defunct> process in the group")
    time.sleep(1.5)
    assert zombies(pgid) == []


def cmdlines(pgid: int) -> dict[int, str]:
    found = {}
    for pid in group_pids(pgid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found[pid] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
    return found


def test_actor_processes_are_named_in_ps(brain_server: BrainServer) -> None:
    sid = brain_server.create_session(idle_ttl_ms=0)["id"]  # its actor stays resident
    assert brain_server.send(sid, "name yourself")["status"] == "ended"
    names = set(cmdlines(brain_server.proc.pid).values())
    for expected in ("brain: actor system", "brain: registry", "brain: model executor",
                     "brain: tool executor", "brain: environment executor",
                     "brain: host dispatcher", "brain: metrics", f"brain: session {sid}"):
        assert expected in names, names
    booted = [name for name in names if "brain.actors.system.boot" in name]
    assert len(booted) == 1, names  # the boot process itself, and no actor under its name
    assert any(name.startswith("gunicorn: worker") for name in names), names


def test_actor_system_stops_without_waiting_for_a_lost_shutdown_reply(tmp_path: Path) -> None:
    """Thespian's shutdown reply is sometimes lost (2 of 6 stops waited its full 10 s)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env.update({"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_BOOT_ID": "stops"})
    took = []
    for _ in range(5):
        boot = subprocess.Popen([sys.executable, "-m", "brain.actors.system.boot"], env=env,
                                stdout=subprocess.PIPE, text=True, process_group=0)
        try:
            assert boot.stdout is not None
            assert boot.stdout.readline().startswith("ready "), "boot did not start"
            started = time.monotonic()
            boot.send_signal(signal.SIGTERM)
            assert boot.wait(timeout=30) == 0
            took.append(time.monotonic() - started)
        finally:
            try:
                os.killpg(boot.pid, signal.SIGKILL)  # whatever a failed stop left behind
            except ProcessLookupError:
                pass
            boot.wait(timeout=10)
    # A lost reply costs Thespian's full 10 s wait; a normal stop takes 1.5-2 s, more on a
    # loaded machine. 8 s still tells the two apart.
    assert max(took) < 8.0, took


def test_a_folder_named_brain_in_the_working_directory_shadows_nothing(tmp_path: Path) -> None:
    """`brain serve` started next to a folder named `brain` (a clone of Brain's repository, say)
    still runs the installed Brain in every process it starts: they are started with `-P`, so
    the working directory is not searched for modules first."""
    work = tmp_path / "work"
    (work / "brain").mkdir(parents=True)
    (work / "brain" / "__init__.py").write_text("raise ImportError('the wrong brain')\n")
    server = ConsoleScriptServer(tmp_path / "data", cwd=work)
    try:
        server.start()
        sid = server.create_session()["id"]
        assert server.send(sid, "hello")["status"] == "ended"
        assert "the wrong brain" not in server.log()
    finally:
        server.kill()


class ConsoleScriptServer(BrainServer):
    """Started as a user starts it: the `brain` console script, which (unlike `python -m`)
    does not search the working directory for modules itself."""

    def command(self) -> list[str]:
        return [str(Path(sys.executable).with_name("brain")), "serve", *self.serve_args]


def test_a_stop_after_turns_logs_no_error(tmp_path: Path) -> None:
    """Session actors exit as the actor system stops: the registry expects those exits, so a
    plain stop never logs one as an actor that died."""
    server = BrainServer(tmp_path / "data")
    server.start()
    try:
        for _ in range(3):
            session_id = server.create_session()["id"]
            server.send(session_id, "hello")
    finally:
        left = server.stop()
    assert left == []
    errors = [line for line in server.log_path.read_text(errors="replace").splitlines()
              if " ERROR " in line or "Traceback" in line]
    assert errors == []
