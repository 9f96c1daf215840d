"""How a web worker talks to the actor system.

Each in-flight request asks through its own private Thespian endpoint (stack-notes Hazard 2:
greenlets sharing one endpoint receive each other's replies). Endpoints are pooled because one
costs about a millisecond to make. An endpoint whose ask timed out is discarded, never pooled,
so a late reply cannot reach the next request; replies are also matched by request id.

A worker answers only for the actor system that writes its own data directory (see
brain/actors/ownership.py): until the registry has said so, every request asks it first.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from typing import Any

from brain import errors
from brain.actors.confine import confine_thespian
from brain.actors.messages import REGISTRY_GLOBAL_NAME, Command, Reply, ToSession
from brain.actors.ownership import OWNER_QUESTION, OWNER_TIMEOUT_SECS, foreign_owner
from brain.settings import Settings

log = logging.getLogger(__name__)

UNBOUNDED_WAIT_SECS = 7 * 24 * 3600.0


class ActorGateway:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._system: Any = None
        self._registry: Any = None
        self._pool: list[Any] = []
        self._globals: dict[str, Any] = {}
        self._owner_confirmed = False

    def _connect(self) -> None:
        self._join()
        if not self._owner_confirmed:
            self._confirm_owner()

    def _join(self) -> None:
        with self._lock:
            if self._system is not None:
                return
            self._require_admin()
            confine_thespian(self._settings.actor_bind)
            from thespian.actors import ActorSystem

            from brain.actors.boot import actor_capabilities
            from brain.actors.registry import Registry

            system = ActorSystem("multiprocTCPBase", actor_capabilities(self._settings))
            self._registry = system.createActor(Registry, globalName=REGISTRY_GLOBAL_NAME)
            self._system = system

    def _confirm_owner(self) -> None:
        """Refuse to serve when the actor system on the port is another Brain's.

        Its session actors would write another data directory: a create answered 201 here
        would then read back as 404 from this worker's journal reads.
        """
        endpoint = self._take_endpoint()
        answer = endpoint.ask(self._registry, OWNER_QUESTION, OWNER_TIMEOUT_SECS)
        if answer is None:
            endpoint.exit_clone()
            raise errors.Internal("the actor system did not answer")
        self._return_endpoint(endpoint)
        refusal = foreign_owner(answer, self._settings, same_start=False)
        if refusal is not None:
            log.error("refusing to serve: %s", refusal)
            raise errors.Internal("the actor system belongs to another Brain")
        self._owner_confirmed = True

    def _require_admin(self) -> None:
        """Never let ActorSystem() start an admin from a web worker (stack-notes Hazard 1)."""
        try:
            with socket.create_connection(("127.0.0.1" if self._settings.actor_bind == "0.0.0.0"
                                           else self._settings.actor_bind,
                                           self._settings.actor_port), timeout=2.0):
                pass
        except OSError:
            raise errors.Internal("the actor system is not running") from None

    def _take_endpoint(self) -> Any:
        with self._lock:
            if self._pool:
                return self._pool.pop()
        from thespian.actors import ExternalContext

        return ExternalContext(self._system._systemBase.external_clone())

    def _return_endpoint(self, endpoint: Any) -> None:
        with self._lock:
            self._pool.append(endpoint)

    def request(self, session_id: str, command: Command, timeout: float | None) -> dict[str, Any]:
        """Route `command` to the session and wait for its Reply; errors come back raised."""
        self._connect()
        request_id = uuid.uuid4().hex
        wait = timeout or UNBOUNDED_WAIT_SECS
        deadline = time.monotonic() + wait
        endpoint = self._take_endpoint()
        reply = endpoint.ask(self._registry, ToSession(request_id, session_id, command), wait)
        while reply is not None and not (isinstance(reply, Reply)
                                         and reply.request_id == request_id):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                reply = None
                break
            reply = endpoint.listen(remaining)
        if reply is None:
            endpoint.exit_clone()
            raise errors.Internal("the session did not answer in time")
        self._return_endpoint(endpoint)
        return reply_body(reply)

    def _global_address(self, global_name: str, actor_class: Any) -> Any:
        """The address of a shared actor (created at boot; looked up once per worker)."""
        self._connect()
        address = self._globals.get(global_name)
        if address is None:
            address = self._system.createActor(actor_class, globalName=global_name)
            self._globals[global_name] = address
        return address

    def ask_global(self, global_name: str, actor_class: Any, message: Any,
                   timeout: float = 5.0) -> Any:
        """Ask a singleton actor (registry, metrics) and return its answer, or None."""
        address = self._global_address(global_name, actor_class)
        endpoint = self._take_endpoint()
        answer = endpoint.ask(address, message, timeout)
        if answer is None:
            endpoint.exit_clone()
            return None
        self._return_endpoint(endpoint)
        return answer

    def tell_global(self, global_name: str, actor_class: Any, message: Any) -> None:
        address = self._global_address(global_name, actor_class)
        endpoint = self._take_endpoint()
        endpoint.tell(address, message)
        self._return_endpoint(endpoint)

    def ping(self, timeout: float = 2.0) -> bool:
        """True when the registry answers: the actor system is up and reachable."""
        from brain.actors.registry import Registry

        try:
            return self.ask_global(REGISTRY_GLOBAL_NAME, Registry, "ping", timeout) == "pong"
        except errors.BrainError:
            return False


def reply_body(reply: Reply) -> dict[str, Any]:
    """An actor's Reply as the HTTP layer wants it: the body, or its error raised."""
    if reply.error_code is not None:
        raise errors.from_code(reply.error_code, reply.error_message or "")
    return reply.body or {}
