"""stack hazard 3: Thespian exchanges pickles, so its ports must not face the network.

The proof reads the bound address of every listening socket of every process the server
started (admin, actors, gunicorn master and workers): each must be loopback. Binding is what
decides reachability, so no packet needs to leave loopback to prove it.
"""

from __future__ import annotations

from brain.processes import listening_sockets
from tests.support.server import BrainServer, group_pids

LOOPBACK = ("127.0.0.1", "::1")


def test_every_listening_socket_is_loopback(brain_server: BrainServer) -> None:
    sid = brain_server.create_session()["id"]
    assert brain_server.send(sid, "start the actors")["status"] == "ended"
    pids = group_pids(brain_server.proc.pid)
    sockets = listening_sockets(pids)
    ports = {port for _, _, port in sockets}
    assert brain_server.actor_port in ports, sockets  # the Thespian admin is among them
    assert brain_server.port in ports, sockets
    assert len(ports) >= 3, sockets  # admin + at least one actor + HTTP
    exposed = [s for s in sockets if s[1] not in LOOPBACK]
    assert exposed == [], f"sockets bound beyond loopback: {exposed}"
