"""`brain actors` + `brain web` as two real processes on one data dir, as the systemd units run
them; JSON log lines naming the request and session."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.damage import damage_first_record
from tests.support.server import BrainServer, free_port, group_pids
from tests.support.waiting import wait_for

TOKEN = "test-operator-token"


class Service:
    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", *args], env=env,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def terminate(self, timeout: float = 60) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        for pid in group_pids(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


REPO = Path(__file__).resolve().parents[2]
WEB_TIERS = {
    "brain web": ["brain.cli", "web"],
    "plain gunicorn": ["gunicorn", "-c", str(REPO / "conf" / "gunicorn.conf.py"),
                       "brain.web.wsgi:application"],
}


@pytest.fixture(params=sorted(WEB_TIERS))
def two_services(tmp_path: Path, request: pytest.FixtureRequest
                 ) -> Iterator[tuple[Service, Service, str, socket.socket]]:
    port = free_port()
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # stands in for systemd
    notify.bind(str(tmp_path / "notify.sock"))
    notify.settimeout(90)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env.update({"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_API_TOKEN": TOKEN,
                "BRAIN_ACTOR_PORT": str(free_port()), "BRAIN_LISTEN": f"127.0.0.1:{port}",
                "BRAIN_DRAIN_SECS": "5", "BRAIN_WEB_WORKERS": "1"})
    actors = Service(["brain.cli", "actors"], {**env, "NOTIFY_SOCKET": notify.getsockname()},
                     tmp_path / "actors.log")
    web: Service | None = None
    try:
        # Type=notify: the web unit starts once the actor system said READY=1.
        assert notify.recv(4096).startswith(b"READY=1"), actors.text()
        web = Service(WEB_TIERS[request.param], env, tmp_path / "web.log")
        yield actors, web, f"http://127.0.0.1:{port}", notify
    finally:
        if web is not None:
            web.kill()
        actors.kill()
        notify.close()


def call(method: str, url: str, headers: dict[str, str] | None = None,
         **kwargs) -> requests.Response:  # type: ignore[no-untyped-def]
    return requests.request(method, url, timeout=60, **kwargs,
                            headers={"Authorization": f"Bearer {TOKEN}", **(headers or {})})


def ready(url: str) -> bool:
    try:
        return requests.get(url + "/readyz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def test_actors_and_web_as_two_services_serve_a_turn_and_stop_cleanly(two_services) -> None:  # type: ignore[no-untyped-def]
    actors, web, url, notify = two_services
    wait_for(lambda: ready(url), timeout=90, what=f"/readyz\n{actors.text()}\n{web.text()}")
    key = {"Idempotency-Key": "create-1"}
    sid = call("POST", f"{url}/v1/sessions", json={}, headers=key).json()["id"]
    assert call("POST", f"{url}/v1/sessions", json={}, headers=key).json()["id"] == sid
    turn = call("POST", f"{url}/v1/sessions/{sid}/messages", json={"input": "hello"})
    assert turn.status_code == 200 and turn.json()["status"] == "ended", turn.text
    assert "Brain actor system ready" in actors.text()
    # The web tier stops first (as systemd does: it is PartOf the actor service), then actors.
    assert web.terminate() == 0, web.text()
    assert actors.terminate() == 0, actors.text()
    assert notify.recv(4096) == b"STOPPING=1"
    wait_for(lambda: not group_pids(actors.proc.pid), timeout=15, what="no actor process left")
    assert not group_pids(web.proc.pid)


def test_actors_stop_with_exit_1_when_the_actor_system_dies(tmp_path: Path) -> None:
    """`brain actors` watches what it started, as `brain serve` does (one loop for both): the
    actor system's death ends it with exit 1 under its own name, so systemd restarts it, and
    leaves no process behind."""
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify.sock"))
    notify.settimeout(90)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env.update({"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_API_TOKEN": TOKEN,
                "BRAIN_ACTOR_PORT": str(free_port()), "BRAIN_SESSION_POOL_SIZE": "1",
                "NOTIFY_SOCKET": notify.getsockname()})
    actors = Service(["brain.cli", "actors"], env, tmp_path / "actors.log")
    try:
        assert notify.recv(4096).startswith(b"READY=1"), actors.text()
        [boot] = [pid for pid in group_pids(actors.proc.pid)
                  if b"brain.actors.system.boot" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        os.kill(boot, signal.SIGKILL)  # (the admin's death is noticed the same way, but the
        # boot process then waits out its shutdown of an actor system that is gone)
        assert actors.proc.wait(timeout=60) == 1, actors.text()
        assert "brain actors: the actor system's boot process exited with code -9; stopping" \
            in actors.text()
        wait_for(lambda: not group_pids(actors.proc.pid), timeout=15, what="no process left")
    finally:
        actors.kill()
        notify.close()


def test_web_alone_says_the_actor_system_is_missing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env.update({"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_API_TOKEN": TOKEN})
    done = subprocess.run([sys.executable, "-c", "import brain.services as s; "
                           "s.ACTORS_WAIT_SECS = 1; raise SystemExit(s.run_web(None))"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "start `brain actors` first" in done.stderr


def test_json_logs_name_the_request_and_the_session(tmp_path: Path) -> None:
    server = BrainServer(tmp_path / "data", env={"BRAIN_LOG_FORMAT": "json"}).start()
    try:
        sid = server.create_session()["id"]
        server.send(sid, "before the damage")
        server.kill()
        damage_first_record(server.data_dir / "sessions" / sid)
        server.start()
        sent = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "x"})
        assert sent.status_code == 500
        request_id = sent.headers["x-request-id"]

        def damage_line(logger: str = "brain.actors.session.actor") -> dict | None:
            for raw in server.log().splitlines():
                line = json.loads(raw) if raw.startswith("{") and request_id in raw else {}
                if line.get("logger") == logger:
                    return line
            return None

        wait_for(lambda: damage_line() is not None, timeout=10, what="the JSON damage line")
        line = damage_line()
        assert line is not None
        assert (line["request_id"], line["session_id"], line["level"]) == (request_id, sid,
                                                                          "ERROR")
        assert "damaged" in line["message"] and line["logger"] == "brain.actors.session.actor"
        found = damage_line("brain.damage_report")  # its first detection, said once
        assert found is not None and (found["session_id"], found["level"]) == (sid, "WARNING")
    finally:
        server.kill()


def test_text_logs_stay_the_default(tmp_path: Path) -> None:
    server = BrainServer(tmp_path / "data").start()
    try:
        sid = server.create_session()["id"]
        server.kill()
        damage_first_record(server.data_dir / "sessions" / sid)
        server.start()
        server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "x"})
        wait_for(lambda: "damaged" in server.log(), timeout=10, what="the damage line")
        assert not [raw for raw in server.log().splitlines() if raw.startswith("{")]
    finally:
        server.kill()

