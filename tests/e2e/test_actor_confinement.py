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


def test_each_actor_port_is_held_by_the_one_process_that_listens_on_it(
        brain_server: BrainServer) -> None:
    """A fork copies descriptors: without letting go of them
    (brain/actors/thespian/inherited_sockets.py)
    every actor held the boot process's and the admin's listening sockets, ports nobody
    accepted on. Only gunicorn's workers share a listener (the HTTP port), by design."""
    sid = brain_server.create_session()["id"]
    assert brain_server.send(sid, "start the actors")["status"] == "ended"
    holders: dict[int, set[int]] = {}
    for pid, _, port in listening_sockets(group_pids(brain_server.proc.pid)):
        holders.setdefault(port, set()).add(pid)
    shared = {port: pids for port, pids in holders.items()
              if len(pids) > 1 and port != brain_server.port}
    assert len(holders) >= 10, holders  # boot, admin, logger, shared actors, pooled sessions
    assert shared == {}, shared
