"""The symptoms Brain's Thespian patches fix, each reproduced in a process of its own.

`python -m tests.support.thespian_scenarios NAME [--unpatched]` runs one scenario against the
installed Thespian, with Brain's patch for it applied (through the function Brain applies it
with) or, with --unpatched, against Thespian as it ships, and prints what it saw as one JSON
line. A patch changes a whole process, so each run is a fresh interpreter; the tests in
tests/actors/ run each scenario both ways and expect the symptom only without the patch.
docs/thespian-patches.md cites these as the reproductions of its reports.

The transport scenarios use Thespian's own TCPTransport, two of them in this process as external
endpoints (what an ActorSystem() client holds), talking over loopback: no admin, no actor.
The convention scenarios drive Thespian's real admin code on an admin object made without its
constructor, whose I/O is replaced by recorders.
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import pickle
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from thespian.actors import Actor, NoCompatibleSystemForActor
from thespian.system import timing
from thespian.system.transport import (
    ExternalInterfaceTransportInit,
    ReceiveEnvelope,
    TransmitIntent,
    TransmitOnly,
)
from thespian.system.transport import TCPTransport as tcp
from thespian.system.transport.IPBase import IPActorAddress

BIG_BYTES = 2_000_000
"""A message larger than what the kernel buffers for a socket: its sending takes several
`send` calls, so one meets what the peer's close did to the connection."""


# --- two transports ----------------------------------------------------------------------------

def endpoint() -> tcp.TCPTransport:
    """A TCPTransport as an ActorSystem() client holds it, listening on a loopback port."""
    return tcp.TCPTransport(ExternalInterfaceTransportInit(), {"Admin Port": 1}, None, None)


def transmit(sender: tcp.TCPTransport, receiver: tcp.TCPTransport, message: Any,
             timeout: float = 3.0) -> dict[str, Any]:
    """Send `message` while `receiver` listens in a thread: how the send ended, what arrived."""
    received: list[Any] = []

    def listen() -> None:
        envelope = receiver.run(None, timedelta(seconds=timeout))
        received.append(envelope.message if isinstance(envelope, ReceiveEnvelope) else None)

    listener = threading.Thread(target=listen)
    listener.start()
    status: list[Any] = []
    intent = TransmitIntent(receiver.myAddress, message,
                            onSuccess=lambda result, _: status.append(result),
                            onError=lambda result, _: status.append(result))
    began = time.monotonic()
    sender.scheduleTransmit(None, intent)
    while not status and time.monotonic() - began < timeout:
        sender.run(TransmitOnly, timedelta(seconds=0.05))
    listener.join()
    return {"status": str(status[0]) if status else None,
            "seconds": round(time.monotonic() - began, 3),
            "arrived": received[0] is not None}


def drop_idle_connection(holder: tcp.TCPTransport, peer: tcp.TCPTransport) -> None:
    """`holder` closes the idle connection it keeps for `peer`, as Thespian does when both sides
    opened one at once and each keeps its own (the other's is shut down)."""
    idle = holder._openSockets.pop(tcp.opsKey(peer.myAddress))
    tcp._safeSocketShutdown(idle)


# --- the scenarios -----------------------------------------------------------------------------

def reuse(patched: bool, late_close: bool = False) -> dict[str, Any]:
    """A 2 MB message written into an idle connection the peer has closed.

    Thespian takes the idle connection, meets EPIPE on a later `send` and declares the target
    dead: the message is dropped. `late_close`: the close is not seen before the write (the
    patch's peek is made to miss it), as when it lands between the two.
    """
    if patched:
        from brain.actors.thespian import reuse as thespian_reuse

        thespian_reuse.patch_idle_socket_reuse()
        if late_close:
            thespian_reuse.closed_by_peer = lambda sock: False
    a, b = endpoint(), endpoint()
    first = transmit(a, b, "hello")
    drop_idle_connection(b, a)
    second = transmit(a, b, ("big", bytes(BIG_BYTES)), timeout=1.5)
    return {"first": first, "second": second}


def select(patched: bool) -> dict[str, Any]:
    """Ten messages each way: how many epoll sets Thespian's loop made for them."""
    if patched:
        from brain.actors.thespian.poll import use_one_shot_poll

        use_one_shot_poll()
    made = _count_calls(selectors.EpollSelector, "__init__")
    a, b = endpoint(), endpoint()
    arrived = [transmit(*pair, f"message {n}")["arrived"]
               for n in range(10) for pair in ((a, b), (b, a))]
    return {"arrived": sum(arrived), "epoll_sets": made()}


def receive(patched: bool) -> dict[str, Any]:
    """One 4 kB message: how many reads the receiving transport's loop made for it."""
    if patched:
        from brain.actors.thespian.receive import read_messages_whole

        read_messages_whole()
    a, b = endpoint(), endpoint()
    reads = _count_calls(tcp.TCPTransport, "_handleReadableIncoming")
    sent = transmit(a, b, ("message", bytes(4000)))
    return {"arrived": sent["arrived"], "reads": reads()}


def acknowledge(patched: bool) -> dict[str, Any]:
    """A 4 kB message after a first one: how often the sender's loop stepped its transmit, and
    how many reads its acknowledgement took; then a message too big for one `send` still
    arrives (its bytes go out over several passes before the acknowledgement is awaited)."""
    if patched:
        from brain.actors.thespian.receive import read_messages_whole

        read_messages_whole()
    a, b = endpoint(), endpoint()
    first = transmit(a, b, "hello")
    steps = _count_calls(tcp.TCPTransport, "_nextTransmitStepCheck")
    ack_reads = _count_calls(tcp.TCPTransport, "_next_XMIT_4")
    sent = transmit(a, b, ("message", bytes(4000)))
    counted = {"steps": steps(), "ack_reads": ack_reads()}
    big = transmit(a, b, bytes(BIG_BYTES), timeout=10.0)
    return {"arrived": first["arrived"] and sent["arrived"] and big["arrived"],
            "status": sent["status"], "big_status": big["status"], **counted}


def idle(patched: bool, peers: int = 30) -> dict[str, Any]:
    """Ten messages each way between two transports while one also keeps idle connections to
    `peers` others: how often its loop hashed an address and built a timer view."""
    # as in Brain's actor processes (brain/actors/thespian/confine.py)
    tcp.TCPTransport.REUSE_SOCKETS = True
    if patched:
        from brain.actors.thespian.idle import cheapen_idle_socket_walk

        cheapen_idle_socket_walk()
    hub, other = endpoint(), endpoint()
    for peer in [endpoint() for _ in range(peers)]:
        transmit(hub, peer, "hello")
        transmit(peer, hub, "hello")
    idle_kept = len(hub._openSockets)
    hashes = _count_property(IPActorAddress, "socketArgs")
    views = _count_calls(timing.ExpirationTimerView, "__init__")
    arrived = [transmit(*pair, f"message {n}")["arrived"]
               for n in range(10) for pair in ((hub, other), (other, hub))]
    return {"arrived": sum(arrived), "idle_kept": idle_kept, "address_hashes": hashes(),
            "timer_views": views()}


def wakeups(patched: bool, count: int = 1000) -> dict[str, Any]:
    """`count` wakeups armed on one transport, as an actor arms them: how many timer
    comparisons that took, and whether they stay in the order they come due."""
    if patched:
        from brain.actors.thespian.wakeups import insert_wakeups_in_place

        insert_wakeups_in_place()
    transport = endpoint()
    transport.run_time = timing.ExpirationTimer(timedelta(seconds=1))  # as in its run()
    compared = _count_calls(timing.ExpirationTimer, "__lt__")
    for n in range(count):
        transport.addWakeup(timedelta(seconds=600 + (n * 7919) % 1000), n)
    pending = [timer._time_to_quit for timer, _ in transport._pendingWakeups]
    return {"armed": len(pending), "in_order": pending == sorted(pending),
            "comparisons": compared()}


class Counted:
    """A message that counts how often it is rendered as text (Thespian renders with `str`)."""

    renderings = 0

    def __init__(self, number: int) -> None:
        self.number = number

    def __repr__(self) -> str:
        Counted.renderings += 1
        return f"Counted({self.number})"

    __str__ = __repr__


def identify(patched: bool, log_file: str | None = None, messages: int = 10) -> dict[str, Any]:
    """`messages` sent from one transport to another, each received envelope logged as an
    actor logs it: how often a message was rendered as text. `log_file`: Thespian's debug log
    is on and written there; the lines that name a message are returned."""
    from thespian.system import utilis

    if log_file is not None:
        utilis._thesplog_file = log_file
        utilis.thesplog_control(logging.DEBUG, False, 1 << 24)
    if patched:
        from brain.actors.thespian.identify import describe_messages_lazily

        describe_messages_lazily()
    a, b = endpoint(), endpoint()
    arrived = 0
    for number in range(messages):
        message = Counted(number)
        arrived += transmit(a, b, message)["arrived"]
        envelope = ReceiveEnvelope(a.myAddress, message)
        utilis.thesplog("ACTOR got %s", envelope.identify(), level=logging.DEBUG)  # as actors do
    lines = []
    if log_file is not None:
        with open(log_file) as log:
            lines = [line.split(" ", 4)[-1].strip() for line in log if "Counted(" in line]
    return {"arrived": arrived, "renderings": Counted.renderings,
            "envelope_text": str(ReceiveEnvelope(a.myAddress, "plain")), "logged": lines}


class Elsewhere(Actor):
    """An actor that this member cannot create: its admin forwards the create."""

    @staticmethod
    def actorSystemCapabilityCheck(capabilities: dict, requirements: Any) -> bool:
        return capabilities.get("member") == "other"


class ForwardingState:
    """The admin's convention state: records forwards; another member takes them, or none."""

    def __init__(self, another_member: bool) -> None:
        self.another_member = another_member
        self.forwarded: list[Any] = []

    def forward_pending_to_remote_system(self, child_class: type, envelope: Any,
                                         source_hash: Any, accepts: Callable) -> list:
        if not self.another_member:
            raise NoCompatibleSystemForActor(child_class, "no other member")
        self.forwarded.append(envelope)
        return [TransmitIntent(envelope.sender, envelope.message)]


def convention_admin(another_member: bool) -> Any:
    """A ConventioneerAdmin of Thespian's, made without its constructor (no socket, no convention),
    that creates nothing here and records what it forwards and answers."""
    from thespian.system.admin.convention import ConventioneerAdmin

    class Counter:
        def inc(self, what: str) -> None:
            pass

    class Addresses:
        instances = iter(range(1, 1000))

        def createLocalAddress(self) -> Any:
            class Address:
                class addressDetails:  # noqa: N801 (Thespian's name)
                    addressInstanceNum = next(Addresses.instances)
            return Address()

    def cannot_start(*args: Any, **kwargs: Any) -> None:
        raise NoCompatibleSystemForActor(Elsewhere, "not on this member")

    admin = ConventioneerAdmin.__new__(ConventioneerAdmin)
    admin._pendingChildren, admin._globalNames, admin._sources = {}, {}, {}
    admin._sCBStats, admin._addrManager = Counter(), Addresses()
    admin.transport = types.SimpleNamespace(myAddress="this admin")
    admin._cstate = ForwardingState(another_member)
    admin._startChildActor = cannot_start
    admin._performIO = lambda iolist: True
    admin.answered = []
    admin._send_intent = lambda intent: admin.answered.append(intent.message)
    return admin


def create_request(global_name: str) -> ReceiveEnvelope:
    from thespian.system.messages.admin import PendingActor

    return ReceiveEnvelope("a web worker", PendingActor(
        f"{__name__}.Elsewhere", None, 1, None, global_name))


def convention_forward(patched: bool) -> dict[str, Any]:
    """Two creates of one global name that this member forwards: is the second forwarded too?

    Thespian files the first under a pending child that nothing removes; the second, finding a
    pending create of the same name, waits behind it for ever.
    """
    if patched:
        from brain.actors.thespian.forwarded_creates import patch_forwarded_creates

        patch_forwarded_creates()
    admin = convention_admin(another_member=True)
    for _ in range(2):
        admin.h_PendingActor(create_request("brain.registry.other"))
    return {"forwarded": len(admin._cstate.forwarded), "pending": len(admin._pendingChildren)}


def convention_nobody_else(patched: bool) -> dict[str, Any]:
    """A forwarded create whose delivery failed, with no other member left to try."""
    if patched:
        from brain.actors.thespian.forwarded_creates import patch_forwarded_creates

        patch_forwarded_creates()
    admin = convention_admin(another_member=False)
    failed = TransmitIntent("the member that died", None)
    failed.orig_create_envelope = create_request("brain.registry.gone")
    try:
        admin._pending_send_failed(None, failed)
    except NoCompatibleSystemForActor as exc:
        return {"raised": type(exc).__name__, "answered": []}
    return {"raised": None, "answered": [hex(m.errorCode) for m in admin.answered]}


class CreatesFile:
    """Unpickling this creates a file: what an attacker would send to an actor's port."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "a"))


SCENARIO_SECRET = b"the secret of this scenario's own".ljust(32, b".")
ANOTHER_SECRET = b"a secret this scenario never uses".ljust(32, b".")


def thespian_frame(body: bytes) -> bytes:
    """How Thespian frames a message on its TCP connections: `<length>>` and the body."""
    return b"%d>" % len(body) + body


def with_tag(secret: bytes, payload: bytes) -> bytes:
    """A body as Brain signs one (an HMAC-SHA256 tag, then the pickle), keyed by `secret`."""
    return hmac.digest(secret, payload, "sha256") + payload


def _send_raw(receiver: tcp.TCPTransport, data: bytes) -> dict[str, Any]:
    """Send `data` on a plain connection to `receiver`'s port while it listens: what it
    answered before closing, and whether it delivered anything."""
    received: list[Any] = []

    def listen() -> None:
        envelope = receiver.run(None, timedelta(seconds=1.0))
        received.append(envelope.message if isinstance(envelope, ReceiveEnvelope) else None)

    listener = threading.Thread(target=listen)
    listener.start()
    answer = b""
    with socket.create_connection(receiver.myAddress.addressDetails.connectArgs[0],
                                  timeout=3.0) as sock:
        sock.sendall(data)
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except OSError:
            pass
    listener.join()
    return {"answer": _describe_answer(answer), "delivered": received[0] is not None}


def _describe_answer(answer: bytes) -> str:
    """Which acknowledgement a frame got: `data-error` or `ack`, `signed` or not, or `none`."""
    if not answer:
        return "none"
    for name, packet in (("data-error", "ACK+DATAERR"), ("ack", "ACK")):
        payload = pickle.dumps(packet)
        if answer.endswith(payload):
            signed = answer == thespian_frame(with_tag(SCENARIO_SECRET, payload))
            return f"{name}, {'signed' if signed else 'unsigned'}"
    return "other"


def _authenticate(patched: bool) -> None:
    if patched:
        from brain.actors.thespian.auth import authenticate_actor_messages

        authenticate_actor_messages(SCENARIO_SECRET)


def forged_message(patched: bool) -> dict[str, Any]:
    """A pickle that creates a file when loaded, framed as Thespian frames a message, sent to an
    endpoint's port by a process that is no actor: unsigned, then signed with another key; then a
    message from a real endpoint. Thespian as it ships loads the pickle: the file is made."""
    _authenticate(patched)
    a, b = endpoint(), endpoint()
    target = _fresh_file("created-by-a-message")
    attack = pickle.dumps(CreatesFile(target))
    unsigned = _send_raw(b, thespian_frame(attack))
    wrong_key = _send_raw(b, thespian_frame(with_tag(ANOTHER_SECRET, attack)))
    fits_after = None
    if patched:
        from brain.actors.thespian.fit import check_thespian

        check_thespian()  # raises if the patched Thespian no longer reads as the one it fits
        fits_after = True
    return {"created": Path(target).exists(), "unsigned": unsigned, "wrong_key": wrong_key,
            "then": transmit(a, b, "hello"), "fits_after": fits_after}


def forged_reply(patched: bool) -> dict[str, Any]:
    """An endpoint sends a message to a port where no actor listens but another process does,
    which answers with a pickle that creates a file when loaded, signed with another key (or
    unsigned): the sender reads it as the acknowledgement. Thespian as it ships loads it."""
    _authenticate(patched)
    a = endpoint()
    impostor = socket.create_server(("127.0.0.1", 0))
    target = _fresh_file("created-by-a-reply")
    attack = pickle.dumps(CreatesFile(target))

    def answer() -> None:
        conn, _ = impostor.accept()
        with conn:
            conn.settimeout(3.0)
            conn.recv(65536)  # the message (small: one recv)
            conn.sendall(thespian_frame(with_tag(ANOTHER_SECRET, attack) if patched else attack))
            time.sleep(0.5)

    answering = threading.Thread(target=answer)
    answering.start()
    status: list[Any] = []
    address = tcp.TCPTransport.getAddressFromString(impostor.getsockname())
    a.scheduleTransmit(None, TransmitIntent(address, "hello",
                                            onSuccess=lambda result, _: status.append(result),
                                            onError=lambda result, _: status.append(result)))
    began = time.monotonic()
    while not status and time.monotonic() - began < 3.0:
        a.run(TransmitOnly, timedelta(seconds=0.05))
    answering.join()
    impostor.close()
    return {"created": Path(target).exists(), "status": str(status[0]) if status else None}


class Sleeper(Actor):
    """A child that answers its pid, then only waits to be killed."""

    def receiveMessage(self, message: Any, sender: Any) -> None:
        if message == "pid":
            import os

            self.send(sender, os.getpid())


class Parent(Actor):
    """Creates a Sleeper, passes its pid on, and reports the ChildActorExited it hears."""

    def receiveMessage(self, message: Any, sender: Any) -> None:
        from thespian.actors import ChildActorExited

        if message == "start":
            self.asker = sender
            self.send(self.createActor(Sleeper), "pid")
        elif isinstance(message, int):
            self.send(self.asker, message)
        elif isinstance(message, ChildActorExited):
            self.send(self.asker, {"pid": getattr(message, "pid", None),
                                   "exitcode": getattr(message, "exitcode", None)})


def exits(patched: bool) -> dict[str, Any]:
    """A real actor system: an actor's child is SIGKILLed; what its ChildActorExited says."""
    import os
    import signal

    from thespian.actors import ActorSystem

    if patched:
        from brain.actors.thespian.exits import tell_how_children_exit

        tell_how_children_exit()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    asys = ActorSystem("multiprocTCPBase", {"Admin Port": port})
    try:
        parent = asys.createActor(Parent)
        child_pid = asys.ask(parent, "start", 10)
        os.kill(child_pid, signal.SIGKILL)
        notice = asys.listen(10)
    finally:
        asys.shutdown()
    return {"child_pid": child_pid, "notice": notice}


def confine(patched: bool) -> dict[str, Any]:
    """The interface an endpoint's port listens on, with THESPIAN_BASE_IPADDR set to loopback
    either way: Thespian still binds an address made for others to reach (`external`) to every
    interface, so only the replaced `IPActorAddress.__init__` keeps the port on loopback."""
    import os

    os.environ["THESPIAN_BASE_IPADDR"] = "127.0.0.1"
    fits_after = None
    if patched:
        from brain.actors.thespian.confine import confine_thespian
        from brain.actors.thespian.fit import check_thespian

        confine_thespian("127.0.0.1")
        check_thespian()  # raises if the patched Thespian no longer reads as the one it fits
        fits_after = True
    listening = endpoint().socket.getsockname()[0]
    return {"listens_on": listening, "fits_after": fits_after}


class Reporter(Actor):
    """Answers how its process is titled and which session and process group it is in."""

    def receiveMessage(self, message: Any, sender: Any) -> None:
        import os

        if message == "report":
            with open("/proc/self/cmdline", "rb") as cmdline:
                title = cmdline.read().split(b"\0")[0].decode()
            self.send(sender, {"title": title, "sid": os.getsid(0), "pgid": os.getpgrp()})


def _actor_process_report(apply: Callable[[], None] | None) -> dict[str, Any]:
    """A real actor system started after `apply` (a patching function, or None): what a
    Reporter actor says of its process, beside this process's session and process group."""
    import os

    from thespian.actors import ActorSystem

    fits_after = None
    if apply is not None:
        from brain.actors.thespian.fit import check_thespian

        apply()
        check_thespian()  # raises if the patched Thespian no longer reads as the one it fits
        fits_after = True
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    asys = ActorSystem("multiprocTCPBase", {"Admin Port": port})
    try:
        report = asys.ask(asys.createActor(Reporter), "report", 10)
    finally:
        asys.shutdown()
    return {"actor": report, "sid": os.getsid(0), "pgid": os.getpgrp(), "fits_after": fits_after}


def proctitle(patched: bool) -> dict[str, Any]:
    """How an actor's process is titled: Thespian's `<class> <address>`, or Brain's."""
    if not patched:
        return _actor_process_report(None)
    from brain.actors.thespian.proctitle import name_thespian_processes

    return _actor_process_report(name_thespian_processes)


def no_daemon(patched: bool) -> dict[str, Any]:
    """Which session an actor's process is in: Thespian's admin starts a session of its own
    (`os.setsid()`), and its actors are forked from it."""
    if not patched:
        return _actor_process_report(None)
    from brain.actors.thespian.no_daemon import keep_admin_in_this_process_group

    return _actor_process_report(keep_admin_in_this_process_group)


def _fresh_file(name: str) -> str:
    """A path to a file not there yet, in a directory of its own."""
    return str(Path(tempfile.mkdtemp(prefix="brain-scenario-")) / name)


def _count_calls(owner: type, name: str) -> Callable[[], int]:
    """Count calls of `owner.name` from now on; the returned function reads the count."""
    original = getattr(owner, name)
    calls = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    setattr(owner, name, counted)
    return lambda: calls[0]


def _count_property(owner: type, name: str) -> Callable[[], int]:
    """Count reads of the property `owner.name` from now on."""
    original = getattr(owner, name)
    reads = [0]

    def counted(instance: Any) -> Any:
        reads[0] += 1
        return original.fget(instance)

    setattr(owner, name, property(counted))
    return lambda: reads[0]


SCENARIOS: dict[str, Callable[..., dict[str, Any]]] = {
    "reuse": reuse,
    "reuse-late-close": lambda patched: reuse(patched, late_close=True),
    "select": select,
    "receive": receive,
    "acknowledge": acknowledge,
    "idle": idle,
    "wakeups": wakeups,
    "identify": identify,
    "identify-logged": lambda patched: identify(patched, log_file=_fresh_file("thespian.log")),
    "convention-forward": convention_forward,
    "convention-nobody-else": convention_nobody_else,
    "forged-message": forged_message,
    "forged-reply": forged_reply,
    "exits": exits,
    "confine": confine,
    "proctitle": proctitle,
    "no-daemon": no_daemon,
}


def run_scenario(name: str, *, patched: bool) -> dict[str, Any]:
    """What scenario `name` saw in a fresh interpreter, with or without Brain's patch."""
    command = [sys.executable, "-m", __name__, name, *([] if patched else ["--unpatched"])]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--unpatched", action="store_true", help="Thespian as it ships")
    args = parser.parse_args()
    print(json.dumps(SCENARIOS[args.scenario](not args.unpatched)), flush=True)


if __name__ == "__main__":
    main()
