"""What Brain uses of Thespian's private side of an endpoint, in one place.

Thespian's public API offers an `ActorSystem` (or an `ExternalContext`) that can tell, ask and
listen; the parts Brain needs beyond that live on its private `_systemBase`: the admin's
address (to ask it for its status), a fresh endpoint of the same system (one per waiting
request would cost every actor a socket, so web workers pool them), the address an endpoint
receives at (the reply inbox names it as `reply_to`), and a send whose transmit is run to its
end, so its sender learns whether it was delivered. Every one of those reads goes through this
module, and what of Thespian 4.0.1 it relies on is the `thespian_endpoint` entry of
brain/actors/thespian/fit.py, checked at start like the patches. Nothing here patches Thespian.
"""

from __future__ import annotations

import time
from typing import Any

SEND_SECS = 30.0  # a routed command not on its way by then has failed to send


def admin_address(asys: Any) -> Any:
    """The address of the admin `asys` (an ActorSystem) is joined to."""
    return asys._systemBase.adminAddr


def new_endpoint(system: Any) -> Any:
    """A new endpoint (an ExternalContext) of `system`, with a transport of its own, so its
    traffic never mixes with another endpoint's; `exit_clone()` closes it."""
    from thespian.actors import ExternalContext

    return ExternalContext(system._systemBase.external_clone())


def endpoint_address(endpoint: Any) -> Any:
    """The address messages to `endpoint` (an ActorSystem or ExternalContext) are sent to."""
    return endpoint._systemBase.transport.myAddress


def send_confirmed(endpoint: Any, address: Any, message: Any,
                   timeout: float = SEND_SECS) -> bool:
    """Send `message` from `endpoint` and run its transport until the transmit is done: True
    when it was delivered, False when it failed or did not finish in `timeout`.

    Thespian's `tell` returns quietly when a transmit ends in failure, and an `ask` learns of
    it only because it waits on the same endpoint; a request whose answer comes to the inbox
    must learn it here, or it would wait out its whole deadline for a message never sent."""
    return send_status(endpoint, address, message, timeout) == "sent"


def send_status(endpoint: Any, address: Any, message: Any,
                timeout: float = SEND_SECS) -> str:
    """Like send_confirmed, with why:

    - "sent": delivered (the receiver acknowledged it);
    - "dead": the target refused the connection: no process listens there, so the message was
      certainly not delivered and may be sent again to a fresh address;
    - "unsent": `timeout` passed before a byte of it left (a connection that never opened, as
      across a network partition); the endpoint must then be dropped (`exit_clone`), which
      ends the transmit, so the message is never delivered;
    - "failed": any other failure or end of `timeout`, where it may or may not have arrived.
    """
    from thespian.system.systemBase import TransmitTrack
    from thespian.system.transport import SendStatus, TransmitIntent

    ops = endpoint._systemBase
    watch = TransmitTrack(ops.transport, ops.adminAddr)
    intent = TransmitIntent(address, message, onError=watch.transmit_failed)
    ops.transport.scheduleTransmit(None, intent)
    limit = time.monotonic() + timeout
    while True:
        remaining = limit - time.monotonic()
        if remaining <= 0:
            untouched = not getattr(intent, "amtSent", 0) and not intent._attempts
            return "unsent" if untouched else "failed"
        pending = ops._run_transport(remaining, txonly=True)
        if watch.failed:
            return "dead" if watch.failure == SendStatus.DeadTarget else "failed"
        if not pending:
            return "sent"
