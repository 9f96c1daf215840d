"""One actor system per Brain: a create answered 201 must read back, never 404.

Thespian joins whatever admin already answers on the actor port. A second Brain given the port
of a running one (two test servers whose "free" ports collided under load) used to start in the
first one's actor system: its creates ran in the first one's session actors and were written to
the first one's data directory, so its own reads answered 404 `no such session` right after the
201. These tests give a second server the first one's ports on purpose.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server import BrainServer, PortTaken
from tests.support.sse import SseClient

GATEWAY_PROBE = """
import json
from brain import errors
from brain.protocol.messages import Recover
from brain.settings import Settings
from brain.web.gateway import ActorGateway

gateway = ActorGateway(Settings.from_env())
ready = gateway.ping()
try:
    gateway.request("0" * 32, Recover(), 20)
    code = None
except errors.BrainError as exc:
    code = exc.code
print(json.dumps({"ready": ready, "code": code}))
"""


def second_server(tmp_path: Path) -> BrainServer:
    (tmp_path / "second").mkdir()
    return BrainServer(tmp_path / "second" / "data")


def assert_reads_back_its_creates(server: BrainServer) -> None:
    sid = server.create_session()["id"]
    stream = SseClient("127.0.0.1", server.port, f"/v1/sessions/{sid}/events", server.token,
                       timeout=30)
    try:
        assert stream.status == 200
    finally:
        stream.close()
    for path in (f"/v1/sessions/{sid}", f"/v1/sessions/{sid}/events",
                 f"/v1/sessions/{sid}/transcript"):
        assert server.request("GET", path).status_code == 200, path


def test_a_brain_refuses_to_start_in_another_brains_actor_system(
    brain_server: BrainServer, tmp_path: Path
) -> None:
    first = brain_server
    second = second_server(tmp_path)
    second.actor_port = first.actor_port  # as if free_port() had handed it out twice
    try:
        with pytest.raises(PortTaken) as refused:
            second.start(attempts=1)
    finally:
        second.kill()
    assert f"actor port {first.actor_port} (BRAIN_ACTOR_PORT) is already in use" \
        in str(refused.value)
    assert not (second.data_dir / "sessions").exists() \
        or not any((second.data_dir / "sessions").iterdir())
    assert_reads_back_its_creates(first)  # the refusal left the first one's actors running


def gateway_probe(data_dir: Path, actor_port: int) -> dict:
    env = {"BRAIN_DATA_DIR": str(data_dir), "BRAIN_ACTOR_PORT": str(actor_port),
           "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", GATEWAY_PROBE], env=env, capture_output=True,
                          timeout=90, check=True)
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def test_a_web_worker_answers_only_for_the_actor_system_of_its_data_directory(
    brain_server: BrainServer, tmp_path: Path
) -> None:
    elsewhere = gateway_probe(tmp_path / "elsewhere", brain_server.actor_port)
    assert elsewhere == {"ready": False, "code": "internal"}
    own = gateway_probe(brain_server.data_dir, brain_server.actor_port)
    assert own == {"ready": True, "code": "not_found"}  # asked the session: it does not exist


def test_a_test_server_is_ready_only_on_a_port_it_holds(
    brain_server: BrainServer, tmp_path: Path
) -> None:
    """The harness side: /readyz answered by another server on a collided HTTP port."""
    second = second_server(tmp_path)
    second.port = brain_server.port
    try:
        with pytest.raises(PortTaken):
            second.start(attempts=1)
    finally:
        second.kill()
    assert_reads_back_its_creates(brain_server)
