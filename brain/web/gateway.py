"""How a web worker talks to the actor system.

A routed command (`request`) is sent through a pooled private Thespian endpoint, free again once
the message is on its way, and its answer comes back to the worker's one reply inbox
(brain/web/reply_inbox.py), which hands it to the waiting request by request id: a thousand
sends waiting on their turns hold no endpoint each. The few direct asks of shared actors
(`ask_global`) still ask through an endpoint of their own (stack hazard 2: greenlets sharing
one endpoint receive each other's replies). Endpoints are pooled because one costs about a
millisecond to make. An endpoint whose ask timed out is discarded, never pooled, so a late
reply cannot reach the next request; replies are also matched by request id.
Before any use, the admin must answer with this data dir's identity (brain/actors/identity.py):
a worker never joins the actor system of another Brain that happens to hold the port.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from brain import errors, request_context
from brain.actors.actor_secret import ActorSecretError, read_actor_secret
from brain.actors.convention import (
    member_requirements,
    registry_global_name,
    supervisor_global_name,
)
from brain.actors.identity import (
    ForeignActorSystem,
    read_run_record,
    require_own_admin,
    settings_identity,
)
from brain.actors.thespian.auth import authenticate_actor_messages
from brain.actors.thespian.confine import confine_thespian
from brain.actors.thespian.endpoint import new_endpoint, send_confirmed, send_status
from brain.actors.thespian.identify import describe_messages_lazily
from brain.ports import local_host
from brain.protocol.messages import (
    REGISTRY_GLOBAL_NAME,
    SHARED_ACTOR_ROLES,
    Command,
    Reply,
    ToSession,
)
from brain.settings import Settings
from brain.tracing.gateway_trace import trace_ask
from brain.web.member_registries import LOOKUP_SECS, MemberNotReached, MemberRegistries
from brain.web.reply_inbox import ReplyInbox

if TYPE_CHECKING:
    from brain.web.members import Member

UNBOUNDED_WAIT_SECS = 7 * 24 * 3600.0


class ActorGateway:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._system: Any = None
        self._registry: Any = None
        self._pool: list[Any] = []
        self._globals: dict[str, Any] = {}
        self._inbox: ReplyInbox | None = None
        self._member_registries = MemberRegistries(self._look_up_member_registry)

    def _connect(self) -> None:
        with self._lock:
            if self._system is not None:
                return
            port, identity = self._expected_admin()
            self._require_admin(port)
            confine_thespian(self._settings.actor_bind,
                             convention=self._settings.member is not None)
            describe_messages_lazily()  # every request sends; see brain/actors/thespian/identify.py
            try:  # every frame signed and checked, as the actors do (brain/actors/thespian/auth.py)
                authenticate_actor_messages(read_actor_secret(self._settings))
            except ActorSecretError as exc:
                raise errors.Internal(f"the actor system cannot be reached: {exc}") from None
            from thespian.actors import ActorSystem, ActorSystemException

            from brain.actors.registry.actor import Registry

            try:
                system = ActorSystem("multiprocTCPBase", {"Admin Port": port})
            except ActorSystemException:
                # Its admin drops our frames unread: they carry another actor secret (another
                # data dir's admin, or a secret that differs), so it never answered.
                raise errors.Internal(f"the actor system on port {port} does not accept this "
                                      "server's signed messages (another data dir's, or "
                                      "another actor secret); this server refuses it") from None
            try:
                require_own_admin(system, identity, port)
            except ForeignActorSystem as exc:
                # Never use it: its registry would put our sessions into its data dir.
                print(f"brain web: {exc}; refusing it", file=sys.stderr, flush=True)
                raise errors.Internal(f"the actor system on port {port} belongs to another "
                                      "data dir; this server refuses it") from None
            self._registry = system.createActor(
                Registry, globalName=registry_global_name(self._settings.member))
            self._system = system

    def _expected_admin(self) -> tuple[int, str]:
        """The actor port and the identity its admin must answer with.

        `brain serve` gives its workers both (BRAIN_ACTOR_PORT, BRAIN_BOOT_ID); a worker started
        without them finds the running actor system of its data dir in `run/actor.json`.
        """
        settings = self._settings
        if settings.actor_port is not None and settings.boot_id:
            return settings.actor_port, settings_identity(settings)
        record = read_run_record(settings.data_path)
        if record is None or not record.identity.startswith(f"{settings.data_path} "):
            raise errors.Internal("the actor system is not running")
        return record.actor_port, record.identity

    def _require_admin(self, port: int) -> None:
        """Never let ActorSystem() start an admin from a web worker (stack hazard 1)."""
        try:
            with socket.create_connection((local_host(self._settings.actor_bind), port),
                                          timeout=2.0):
                pass
        except OSError:
            raise errors.Internal("the actor system is not running") from None

    def _reply_inbox(self) -> ReplyInbox:
        """This worker's inbox for answers (brain/web/reply_inbox.py), made on first use."""
        if self._inbox is None:
            with self._lock:
                if self._inbox is None:
                    self._inbox = ReplyInbox(new_endpoint(self._system))
        return self._inbox

    def _take_endpoint(self) -> Any:
        with self._lock:
            if self._pool:
                return self._pool.pop()
        return new_endpoint(self._system)

    def _return_endpoint(self, endpoint: Any) -> None:
        with self._lock:
            self._pool.append(endpoint)

    def request(self, session_id: str, command: Command, timeout: float | None,
                member: Member | None = None) -> dict[str, Any]:
        """Route `command` to the session and wait for its Reply; errors come back raised.

        `member` is another convention member whose registry holds the session; None is this
        actor system's own registry. A member that cannot be reached within LOOKUP_SECS raises
        MemberNotReached when the command certainly did not arrive there, else Unavailable.
        """
        self._connect()
        # The client's x-request-id, so a trace (and a log line) can be found by it. Reusing it
        # for a second ask of the same request is safe: a timed-out endpoint is never reused.
        request_id = request_context.request_id.get() or uuid.uuid4().hex
        wait = timeout or UNBOUNDED_WAIT_SECS
        deadline = time.monotonic() + wait
        inbox = self._reply_inbox()
        waiter = inbox.expect(request_id)
        try:
            message = ToSession(waiter.request_id, session_id, command, reply_to=inbox.address)
            registry = self._send_to_registry(message, member)
            reply = waiter.wait(deadline) if registry is not None else None
        finally:
            inbox.forget(waiter)
        if reply is None:
            if member is not None:  # the member holding it may have died meanwhile
                raise errors.Unavailable(f"member {member.name} did not answer; retry later")
            raise errors.Internal("the session did not answer in time")
        trace_ask("recv", registry, reply, session_id)
        sequence = (reply.body or {}).get("sequence")
        if isinstance(sequence, int):
            request_context.sequence.set(sequence)
        return reply_body(reply)

    def _send_to_registry(self, message: ToSession, member: Member | None) -> Any:
        """Deliver `message` to the registry holding its session; that registry's address,
        or None when this member's own did not take it in SEND_SECS
        (brain/actors/thespian/endpoint.py)."""
        if member is None:
            trace_ask("send", self._registry, message)
            endpoint = self._take_endpoint()
            if send_confirmed(endpoint, self._registry, message):
                self._return_endpoint(endpoint)
                return self._registry
            endpoint.exit_clone()  # a failed transmit may leave the endpoint unusable
            return None
        for _attempt in range(2):
            registry = self._member_registries.address(member.name, member.identity)
            trace_ask("send", registry, message)
            endpoint = self._take_endpoint()
            status = send_status(endpoint, registry, message, LOOKUP_SECS)
            if status == "sent":
                self._return_endpoint(endpoint)
                return registry
            endpoint.exit_clone()
            if status != "dead":
                break
            self._member_registries.forget(member.name, registry)  # it restarted: look again
        if status in ("dead", "unsent"):
            raise MemberNotReached(f"member {member.name} is not reachable now; retry later")
        raise errors.Unavailable(f"member {member.name} did not answer; retry later")

    def _look_up_member_registry(self, name: str) -> Any:
        """Another member's registry, placed by Thespian: only that member's actor system
        satisfies the requirements (Registry.actorSystemCapabilityCheck), and its admin answers
        with the registry's global name. Blocks until Thespian answers; MemberRegistries
        (brain/web/member_registries.py) runs it in a thread of its own and bounds the wait.
        None when no member of that name is in the convention."""
        from thespian.actors import ActorSystemException

        from brain.actors.registry.actor import Registry

        context = new_endpoint(self._system)
        try:
            return context.createActor(
                Registry, targetActorRequirements=member_requirements(name),
                globalName=registry_global_name(name))
        except ActorSystemException:  # no such member any more, or it did not answer
            return None
        finally:
            context.exit_clone()

    def _global_address(self, global_name: str, actor_class: Any) -> Any:
        """The address of a shared actor (created at boot; looked up once per worker, and
        again after an ask of it went unanswered). Asked of the ActorSupervisor, never made by
        global name here: a lookup by name creates a missing actor, and one created by a web
        worker while its predecessor is being replaced would be one no supervisor watches."""
        self._connect()
        if global_name == REGISTRY_GLOBAL_NAME:
            global_name = registry_global_name(self._settings.member)  # this member's own
        address = self._globals.get(global_name)
        if address is None and not _supervised(global_name):
            address = self._system.createActor(actor_class, globalName=global_name)
            self._globals[global_name] = address  # a member's Roster: made by boot, unwatched
        if address is None:
            where = self.shared_actors()
            address = where.addresses.get(global_name) if where is not None else None
            if address is None:
                raise errors.Internal("that part of the actor system is being replaced; "
                                      "retry in a moment")
        return address

    def shared_actors(self, timeout: float = 2.0) -> Any:
        """The supervisor's ActorsAre (live shared actors and missing roles), or None when it
        did not answer; the addresses it names are remembered."""
        from brain.actors.system.supervisor import ActorSupervisor
        from brain.protocol.messages import ActorsAre, WhereAre

        answer = self.ask_global(supervisor_global_name(self._settings.member),
                                 ActorSupervisor, WhereAre(), timeout)
        if not isinstance(answer, ActorsAre):
            return None
        self._globals.update(answer.addresses)
        return answer

    def _forget_global(self, global_name: str) -> None:
        """An ask that got no answer may have gone to an actor that died and was replaced
        under the same name (brain/actors/system/supervisor.py): look the name up again next
        time."""
        if global_name == REGISTRY_GLOBAL_NAME:
            global_name = registry_global_name(self._settings.member)
        self._globals.pop(global_name, None)

    def _send_global(self, global_name: str, actor_class: Any, message: Any,
                     timeout: float) -> tuple[Any, Any] | None:
        """Send to a shared actor: (endpoint, address) once delivered, or None.

        A cached address may be that of an actor the supervisor has since replaced
        (brain/actors/system/supervisor.py); its port refuses the connection, so the message
        certainly did not arrive and goes once more to the address the supervisor names now.
        Without this, the first request after a replacement that a web worker handles would
        fail, although the replacement is up."""
        for _attempt in range(2):
            address = self._global_address(global_name, actor_class)
            endpoint = self._take_endpoint()
            trace_ask("send", address, message)
            status = send_status(endpoint, address, message, timeout)
            if status == "sent":
                return endpoint, address
            endpoint.exit_clone()  # a failed transmit may leave the endpoint unusable
            self._forget_global(global_name)
            if status != "dead":
                return None
        return None

    def ask_global(self, global_name: str, actor_class: Any, message: Any,
                   timeout: float = 5.0) -> Any:
        """Ask a singleton actor (registry, metrics) and return its answer, or None."""
        deadline = time.monotonic() + timeout
        sent = self._send_global(global_name, actor_class, message, timeout)
        if sent is None:
            return None
        endpoint, address = sent
        answer = endpoint.listen(max(0.0, deadline - time.monotonic()))
        if answer is None:
            endpoint.exit_clone()
            self._forget_global(global_name)
            return None
        trace_ask("recv", address, answer)
        self._return_endpoint(endpoint)
        return answer

    def ask_global_reply(self, global_name: str, actor_class: Any, message: Any,
                         request_id: str, timeout: float) -> Reply | None:
        """Ask a singleton actor and return its Reply to `request_id`, or None when none came
        in time. Anything else the endpoint receives meanwhile is skipped."""
        deadline = time.monotonic() + timeout
        sent = self._send_global(global_name, actor_class, message, timeout)
        if sent is None:
            return None
        endpoint, address = sent
        first = endpoint.listen(max(0.0, deadline - time.monotonic()))
        reply = _reply_to(request_id, endpoint, first, deadline)
        if reply is None:
            endpoint.exit_clone()
            self._forget_global(global_name)
            return None
        trace_ask("recv", address, reply)
        self._return_endpoint(endpoint)
        return reply

    def tell_global(self, global_name: str, actor_class: Any, message: Any) -> None:
        """Send without an answer. Thespian's `tell` returns quietly even when the transmit
        failed, so only what may be lost goes this way (a metrics report, say)."""
        address = self._global_address(global_name, actor_class)
        endpoint = self._take_endpoint()
        trace_ask("send", address, message)
        endpoint.tell(address, message)
        self._return_endpoint(endpoint)

    def ping(self, timeout: float = 2.0) -> bool:
        """True when the registry answers: the actor system is up and reachable."""
        from brain.actors.registry.actor import Registry

        try:
            return self.ask_global(REGISTRY_GLOBAL_NAME, Registry, "ping", timeout) == "pong"
        except errors.BrainError:
            return False


def _supervised(global_name: str) -> bool:
    """Whether the ActorSupervisor creates the actor of that name (the registry and the shared
    actors), and so knows its address."""
    return global_name in SHARED_ACTOR_ROLES or global_name.startswith(REGISTRY_GLOBAL_NAME)


def _reply_to(request_id: str, endpoint: Any, first: Any, deadline: float) -> Reply | None:
    """The Reply to `request_id`: `first` (what the ask returned) or a later message, skipping
    others (a late answer to an earlier request of a pooled endpoint); None past `deadline`."""
    reply = first
    while reply is not None and not (isinstance(reply, Reply)
                                     and reply.request_id == request_id):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        reply = endpoint.listen(remaining)
    return reply


def reply_body(reply: Reply) -> dict[str, Any]:
    """An actor's Reply as the HTTP layer wants it: the body, or its error raised."""
    if reply.error_code is not None:
        error = errors.from_code(reply.error_code, reply.error_message or "")
        retry_after = getattr(reply, "retry_after", None)  # absent in an older peer's Reply
        if retry_after is not None:
            error.retry_after = retry_after
        raise error
    return reply.body or {}
