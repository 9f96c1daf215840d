"""Nothing that reaches an actor port is unpickled unless it is signed with the actor secret.

Every listening socket of a running server's process group other than its HTTP port is a
Thespian port: the admin, its logger, every actor, and the private endpoints of the boot process
and of each web worker (which receive replies). Each gets the frame an attacker would send, a
pickle that creates a file when loaded, framed as Thespian frames a message: unsigned, and
signed with a key that is not the server's. The file must never appear, each port must answer
with its own data-error acknowledgement and close, and the server must still serve a turn. As a
check that the frame would have worked, the same pickle signed with the real secret does make
the file (on the admin's port, where loading it harms nothing else).
"""

from __future__ import annotations

import pickle
import socket
import time
from pathlib import Path

from brain.actors.actor_secret import SECRET_FILE
from brain.processes import listening_sockets
from tests.support.server import BrainServer, group_pids
from tests.support.thespian_scenarios import (
    ANOTHER_SECRET,
    CreatesFile,
    thespian_frame,
    with_tag,
)

ANSWER_TIMEOUT_SECS = 3.0


def send_frame(port: int, frame: bytes) -> bytes | None:
    """Send `frame` on a fresh connection to `port`: what came back before the port closed the
    connection, or None when nothing came in time (an endpoint that is not reading now; it
    reads the frame when it next runs)."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_SECS) as sock:
        sock.sendall(frame)
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except TimeoutError:
            return answer or None
    return answer


def actor_ports(server: BrainServer) -> dict[int, set[str]]:
    """Every TCP port a process of the server's group listens on, but its HTTP port, with the
    titles of the processes that hold it."""
    assert server.proc is not None
    held: dict[int, set[str]] = {}
    for pid, _, port in listening_sockets(group_pids(server.proc.pid)):
        if port != server.port:
            held.setdefault(port, set()).add(_title(pid))
    return held


def _title(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "(gone)"


def is_endpoint_holder(title: str) -> bool:
    """A process whose Thespian endpoints read only while it waits on an actor: a web worker,
    or the boot process."""
    return title.startswith("gunicorn: worker") or "brain.actors.system.boot" in title


def test_forged_frames_are_dropped_on_every_actor_port(brain_server: BrainServer,
                                                       tmp_path: Path) -> None:
    sid = brain_server.create_session()["id"]
    assert brain_server.send(sid, "start the actors")["status"] == "ended"
    ports = actor_ports(brain_server)
    assert brain_server.actor_port in ports
    secret = (brain_server.data_dir / SECRET_FILE).read_bytes()
    data_error = thespian_frame(with_tag(secret, pickle.dumps("ACK+DATAERR")))
    target = tmp_path / "created-through-an-actor-port"
    attack = pickle.dumps(CreatesFile(str(target)))

    answered, silent = set(), set()
    for port in ports:
        for name, frame in (("unsigned", thespian_frame(attack)),
                            ("wrong key", thespian_frame(with_tag(ANOTHER_SECRET, attack)))):
            answer = send_frame(port, frame)
            assert not target.exists(), f"port {port} ({ports[port]}), {name}: loaded"
            if answer is None:
                silent.add(port)
                continue
            assert answer == data_error, f"port {port} ({ports[port]}), {name}: {answer!r}"
            answered.add(port)
    assert brain_server.actor_port in answered
    assert len(answered) >= 10, (answered, ports)  # admin, logger, registry, executors, ...
    for port in silent:  # forks inherit their parent's listening sockets, but never read them
        assert any(is_endpoint_holder(title) for title in ports[port]), (port, ports[port])

    for text in ("still serving", "and the web workers' endpoints read what waits for them"):
        assert brain_server.send(sid, text)["status"] == "ended"
    time.sleep(1.0)  # anything loaded late would have made the file by now
    assert not target.exists()
    log = brain_server.log_path.read_text(errors="replace")
    assert "dropped a message from 127.0.0.1 unread: not signed with this server's actor " \
           "secret" in log

    # The control: the same frame signed with the server's own secret is loaded.
    send_frame(brain_server.actor_port, thespian_frame(with_tag(secret, attack)))
    deadline = time.monotonic() + ANSWER_TIMEOUT_SECS
    while not target.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert target.exists(), "a frame signed with the real secret should have been loaded"
    target.unlink()
    assert brain_server.send(sid, "and still serving")["status"] == "ended"
    brain_server.stop()  # the boot process's endpoint reads what waits for it as it stops
    assert not target.exists()
