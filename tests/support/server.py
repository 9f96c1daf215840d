"""A real `brain serve` in a subprocess, for end-to-end tests.

Each server gets its own data dir, HTTP port and actor admin port, runs in its own process
group (so a crash test can SIGKILL every process Brain started at once), and is always torn
down, with a check that no process of the group survives.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests

from brain.processes import listening_sockets
from brain.procstat import all_stats

START_TIMEOUT_SECS = 60.0
# The machine's cache of compiled Agentloops, as every test server and command sees it: the
# checkout's build/ directory, where tests/support/python_guests.py builds its components.
TEST_AGENTLOOP_CACHE = Path(__file__).resolve().parents[2] / "build" / "python-agentloops"
STOP_TIMEOUT_SECS = 60.0
REQUEST_TIMEOUT_SECS = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def group_pids(pgid: int) -> list[int]:
    return [proc.pid for proc in all_stats() if proc.pgrp == pgid and proc.state != "Z"]


class PortTaken(RuntimeError):
    """The HTTP or actor port chosen for a test server was taken before it could bind."""


class BrainServer:
    def __init__(self, data_dir: Path, env: dict[str, str] | None = None,
                 cwd: Path | None = None, python: str = sys.executable,
                 serve_args: tuple[str, ...] = ()) -> None:
        self.data_dir = data_dir
        self.cwd = cwd  # the directory `brain serve` starts in (None: the test's own)
        self.python = python  # the interpreter (and so the install) that runs Brain
        self.serve_args = serve_args  # extra `brain serve` flags
        self.token = "test-operator-token"
        self.extra_env = env or {}
        self.port = free_port()
        self.actor_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"serve-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
        env.update({
            "BRAIN_DATA_DIR": str(self.data_dir),
            "BRAIN_LISTEN": f"127.0.0.1:{self.port}",
            "BRAIN_ACTOR_PORT": str(self.actor_port),
            "BRAIN_API_TOKEN": self.token,
            "BRAIN_DRAIN_SECS": "5",
            # one cache of compiled components for every test server, as a machine has one
            "BRAIN_AGENTLOOP_CACHE": str(TEST_AGENTLOOP_CACHE),
        })
        env.update(self.extra_env)
        return env

    def command(self) -> list[str]:
        """The argv that starts the server; a subclass may prefix it (e.g. `ip netns exec`),
        as long as the prefix execs it, so the process (and its group) stays the server's."""
        return [self.python, "-m", "brain.cli", "serve", *self.serve_args]

    def start(self, attempts: int = 3) -> BrainServer:
        """Start and wait for /readyz; retried on fresh ports if a port was taken meanwhile.

        free_port() can only promise a port was free when asked; an outgoing connection, or
        another test's server, may take it before Brain binds it, which is a race of the test
        harness, not of Brain.
        """
        for attempt in range(attempts):
            try:
                return self._start_once()
            except PortTaken:
                if attempt == attempts - 1:
                    raise
                self.port, self.actor_port = free_port(), free_port()
        raise AssertionError("unreachable")

    def _start_once(self) -> BrainServer:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command(),
                                         env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, cwd=self.cwd)
        deadline = time.monotonic() + START_TIMEOUT_SECS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log_text = self.log()
                self.proc = None
                # `brain serve` names a taken port in one line ("... is already in use").
                if "already in use" in log_text or "did not start" in log_text:
                    raise PortTaken(log_text)
                raise RuntimeError(f"brain serve exited early:\n{log_text}")
            try:
                ready = requests.get(self.url + "/readyz", timeout=2).status_code == 200
            except requests.RequestException:
                ready = False
            if ready:
                if self._serves_its_port():
                    return self
                # Another server holds the port and answered; ours could not bind it.
                self.kill()
                raise PortTaken(f"port {self.port} answers, but not from this server")
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"brain serve did not become ready:\n{self.log()}")

    def _serves_its_port(self) -> bool:
        """Whether the HTTP port is listened on by a process of this server's group."""
        assert self.proc is not None
        pids = group_pids(self.proc.pid)
        return any(port == self.port for _, _, port in listening_sockets(pids))

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def stop(self) -> list[int]:
        """SIGTERM the supervisor; returns the pids of its group still alive afterwards."""
        if self.proc is None:
            return []
        pgid = self.proc.pid
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_SECS)
            except subprocess.TimeoutExpired:
                pass
        deadline = time.monotonic() + 10
        while group_pids(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = group_pids(pgid)
        self.kill()
        return left

    def kill(self) -> None:
        """SIGKILL every process of the server's group, as a power cut would."""
        if self.proc is None:
            return
        pgid = self.proc.pid
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 10
        while group_pids(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.proc = None

    # --- HTTP helpers -----------------------------------------------------------------------

    def request(self, method: str, path: str, *, token: str | None = "default",
                **kwargs: Any) -> requests.Response:
        headers = dict(kwargs.pop("headers", {}) or {})
        if token == "default":
            token = self.token
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        kwargs.setdefault("timeout", REQUEST_TIMEOUT_SECS)
        return requests.request(method, self.url + path, headers=headers, **kwargs)

    def create_session(self, **body: Any) -> dict[str, Any]:
        resp = self.request("POST", "/v1/sessions", json=body)
        assert resp.status_code == 201, resp.text
        return resp.json()

    def send(self, session_id: str, text: Any) -> dict[str, Any]:
        resp = self.request("POST", f"/v1/sessions/{session_id}/messages", json={"input": text})
        assert resp.status_code == 200, resp.text
        return resp.json()

    def events(self, session_id: str, after: int = 0) -> list[dict[str, Any]]:
        resp = self.request("GET", f"/v1/sessions/{session_id}/events", params={"after": after})
        assert resp.status_code == 200, resp.text
        return resp.json()["events"]


def configured(tmp_path: Path, toml: str, env: dict[str, str] | None = None) -> BrainServer:
    """A server (not started) whose BRAIN_CONFIG is `toml`, written to tmp_path/brain.toml."""
    config = tmp_path / "brain.toml"
    config.write_text(toml)
    return BrainServer(tmp_path / "data", env={"BRAIN_CONFIG": str(config), **(env or {})})


def serving(tmp_path: Path, toml: str, env: dict[str, str] | None = None) -> Iterator[BrainServer]:
    """A started `configured` server, killed when the generator is closed: a fixture's body
    (`yield from serving(tmp_path, MODELS)`)."""
    server = configured(tmp_path, toml, env).start()
    try:
        yield server
    finally:
        server.kill()


RELEASE_TIMEOUT_SECS = 20.0


def wait_for_no_open_session_actor(s: BrainServer) -> None:
    """Until the registry has heard every session actor's release (its `/metrics` gauge), so
    the next command opens its session anew, in an actor of the pool."""
    deadline = time.monotonic() + RELEASE_TIMEOUT_SECS
    while time.monotonic() < deadline:
        metrics = s.request("GET", "/metrics").text
        if re.search(r"^brain_session_actors_open 0(\.0)?$", metrics, re.MULTILINE):
            return
        time.sleep(0.05)
    raise AssertionError("a session actor stayed open")


def session_processes(server: BrainServer) -> int:
    """Processes of the server titled as session actors, `brain: session <id>`
    (brain/actors/thespian/proctitle.py): serving a session now. A released session's actor goes
    back
    to the warm pool as `brain: pooled session` (or exits), so the count falls by one either
    way."""
    count = 0
    for pid in group_pids(server.proc.pid):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"brain: session "):
                count += 1
        except OSError:
            continue
    return count
