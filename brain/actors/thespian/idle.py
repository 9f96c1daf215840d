"""Cheap per-connection bookkeeping in Thespian's transport loop.

With connections kept open between messages (brain/actors/thespian/reuse.py), an actor holds an
idle socket
per peer it has talked to, and every pass of Thespian 4.0.1's TCP loop walks all of them: for
each it hashes the peer's address (to find the socket in its table) and asks whether the socket
has been idle too long. Both are costly for what they compute. The address's hash rebuilds two
tuples through three properties every time (`hash((socketArgs, connectArgs))`), and the idle
check builds a fresh `ExpirationTimerView` (reading the clock inside) to compare two numbers.
A registry serving a fleet holds a socket to every pooled session actor, executor and web
worker, and passes its loop several times per message: in the profile of 400 sessions waiting
on their models, the walk was about a quarter of the registry's CPU.

So, in actor processes (`brain.actors.system.boot`, whose forks inherit it):
- `IPActorAddress.__hash__` keeps the hash it computed on the address. The fields it hashes are
  set when the address is made and never change; the kept value is dropped when the address is
  pickled, since a string's hash differs from process to process.
- `IdleSocket.expired` compares the clock with the timer's own deadline, the same comparison
  `ExpirationTimerView.expired` makes, without building the view.

The results are the same as Thespian's, so nothing else changes (docs/thespian-patches.md, 5).
"""

from __future__ import annotations

from typing import Any

from thespian.system import timing
from thespian.system.transport import IPBase
from thespian.system.transport import TCPTransport as tcp

from brain.actors.thespian.fit import patch_once

_KEPT_HASH = "_brain_hash"


def _kept_hash(address: Any) -> int:
    kept = address.__dict__.get(_KEPT_HASH)
    if kept is None:
        kept = address.__dict__[_KEPT_HASH] = hash((address.socketArgs, address.connectArgs))
    return kept


def _state_without_hash(original: Any) -> Any:
    def __getstate__(address: Any) -> dict[str, Any]:
        state = original(address)
        if _KEPT_HASH in state:
            state = dict(state)
            del state[_KEPT_HASH]
        return state

    return __getstate__


def _idle_too_long(idle: Any) -> bool:
    deadline = idle.validity._time_to_quit
    return deadline is not None and timing.currentTime() >= deadline


@patch_once("thespian_idle")
def cheapen_idle_socket_walk() -> None:
    """Patch Thespian's transport as the module docstring says."""
    address = IPBase.IPActorAddress
    address.__getstate__ = _state_without_hash(address.__getstate__)  # type: ignore[method-assign]
    address.__hash__ = _kept_hash  # type: ignore[method-assign,assignment]
    tcp.IdleSocket.expired = _idle_too_long  # type: ignore[method-assign]
