"""brain/actors/thespian/endpoint.py works on Thespian's own endpoints: external contexts over
real TCP transports on loopback, made by Thespian's own `external_clone`; no admin, no actor."""

from __future__ import annotations

import threading
from typing import Any

from thespian.actors import ExternalContext
from thespian.system.systemBase import systemBase
from thespian.system.transport import TCPTransport as tcp

from brain.actors.thespian.endpoint import (
    admin_address,
    endpoint_address,
    new_endpoint,
    send_confirmed,
    send_status,
)
from brain.ports import free_port
from tests.support.thespian_scenarios import endpoint as transport


class System:
    """What an ActorSystem() client holds, as far as endpoints go: its `_systemBase` has an
    admin address and a transport, and makes endpoints with Thespian's `external_clone`."""

    class Base:
        external_clone = systemBase.external_clone

        def __init__(self) -> None:
            self.transport = transport()
            self.adminAddr = self.transport.myAddress  # no admin answers: none is asked

    def __init__(self) -> None:
        self._systemBase = System.Base()

    def close(self) -> None:
        self._systemBase.transport.close()


def test_an_endpoint_knows_its_admin_and_its_own_address() -> None:
    system = System()
    one, other = new_endpoint(system), new_endpoint(system)
    try:
        assert isinstance(one, ExternalContext)
        assert admin_address(one) == admin_address(other) == system._systemBase.adminAddr
        assert endpoint_address(one) != endpoint_address(other)
    finally:
        for each in (one, other):
            each.exit_clone()
        system.close()


def test_a_send_is_run_to_its_end() -> None:
    system = System()
    sender, receiver = new_endpoint(system), new_endpoint(system)
    arrived: list[Any] = []
    listening = threading.Thread(target=lambda: arrived.append(receiver.listen(5)))
    listening.start()
    try:
        assert send_confirmed(sender, endpoint_address(receiver), "hello", timeout=5)
        listening.join()
        assert arrived == ["hello"]
        nobody = tcp.TCPTransport.getAddressFromString(
            ("127.0.0.1", free_port("127.0.0.1")))
        assert send_status(sender, nobody, "hello", timeout=5) == "dead"
    finally:
        listening.join()
        for each in (sender, receiver):
            each.exit_clone()
        system.close()
