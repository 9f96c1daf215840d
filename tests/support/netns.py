"""Hosts on one network segment, made of Linux network namespaces, for end-to-end tests.

The loopback test of several hosts (tests/e2e/test_several_hosts.py) gives each member its own
127.0.0.x address, but loopback never loses a packet: a "host" there can only crash, never
vanish from the network. Here each member runs in its own network namespace, with its own
interface (`eth0`), address (10.231.0.<i>/24) and port space, on one bridge, as an operator
would run several hosts on a private network. The bridge itself carries 10.231.0.254 in the
test's own (root) namespace, so the test reaches every member as a client on the same network
would.

A partition (`Segment.cut`) must lose packets silently, like a cut cable, not refuse them: a
refusal (RST, ICMP unreachable) is noticed at once and tests nothing about timeouts. This
machine has no netem, no iptables/nftables and no tc actions, so the cut is made with the
neighbour tables: each side of the cut gets a permanent entry for the other's address with a
MAC address nobody has. Frames then leave for that MAC, the bridge floods them (it has never
seen it), and every interface drops them as addressed to another host. Nothing answers, nothing
is refused. `heal` deletes those entries, and ARP finds the real addresses again.

Everything made here is removed on exit, even after a failure half-way through the setup.
Segments use one fixed subnet, so they are serialised across processes by a lock file.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from brain.processes import _listening_table
from tests.support.convention import MemberServer
from tests.support.server import group_pids

SUBNET = "10.231.0"
PREFIX = 24
BRIDGE_ADDRESS = f"{SUBNET}.254"
BOGUS_MAC = "02:00:00:00:00:fe"
"""A locally administered MAC address no interface here has: frames sent to it vanish."""
INNER_INTERFACE = "eth0"
IP_TIMEOUT_SECS = 15.0
LOCK_PATH = Path("/run/lock/brain-netns-segment.lock")
LOCK_TIMEOUT_SECS = 600.0
"""How long a Segment waits for another (this subnet is one per machine) to be torn down."""


class NetnsError(RuntimeError):
    """An `ip` command failed while making or changing the segment."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `ip ARGS`; raises NetnsError (with its stderr) when it fails and `check` is set."""
    try:
        done = subprocess.run(["ip", *args], capture_output=True, text=True,
                              timeout=IP_TIMEOUT_SECS)
    except subprocess.TimeoutExpired as exc:
        raise NetnsError(f"ip {' '.join(args)}: no answer within {IP_TIMEOUT_SECS} s") from exc
    if check and done.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done


def netns_unavailable() -> str | None:
    """Why network namespaces cannot be made here (a reason to skip with), or None.

    Making namespaces, veth pairs and bridges needs root, the `ip` binary and a kernel (or
    container) that allows them; each is tried once, and undone at once.
    """
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no `ip` binary (iproute2)"
    tag = secrets.token_hex(3)
    probe, bridge = f"brain-probe-{tag}", f"brpr{tag}"
    try:
        for args in (("netns", "add", probe), ("link", "add", bridge, "type", "bridge"),
                     ("link", "add", f"vpr{tag}", "type", "veth", "peer", "name",
                      INNER_INTERFACE, "netns", probe)):
            done = ip(*args, check=False)
            if done.returncode != 0:
                return f"`ip {' '.join(args)}` fails: {done.stderr.strip()}"
        return None
    except NetnsError as exc:
        return str(exc)
    finally:
        ip("link", "del", f"vpr{tag}", check=False)
        ip("link", "del", bridge, check=False)
        ip("netns", "del", probe, check=False)


@dataclass(frozen=True)
class Host:
    """One member's place on the segment: its namespace, its address, the bridge's end of its
    veth pair (in the root namespace)."""

    index: int
    namespace: str
    address: str
    outer_interface: str

    def exec_prefix(self) -> list[str]:
        """The argv prefix that runs a command in this host's namespace. `ip netns exec` execs
        the command, so its pid (and process group) is the command's own."""
        return ["ip", "netns", "exec", self.namespace]


class Segment:
    """A bridge in the root namespace and `count` namespaces on it (hosts 1..count).

    Use as a context manager; `close()` removes everything and may be called any number of
    times.
    """

    def __init__(self, count: int = 3) -> None:
        if not 1 <= count <= 253:
            raise ValueError("1..253 hosts on one /24")
        tag = secrets.token_hex(2)
        self.bridge = f"brns{tag}"
        self.hosts = [Host(i, f"brain-ns-{tag}-{i}", f"{SUBNET}.{i}", f"vns{tag}h{i}")
                      for i in range(1, count + 1)]
        self._lock: int | None = None
        self._made_bridge = False
        self._made: list[Host] = []
        self._cuts: set[tuple[int, int]] = set()

    def host(self, index: int) -> Host:
        return self.hosts[index - 1]

    # --- making and removing ------------------------------------------------------------------

    def __enter__(self) -> Segment:
        try:
            self._take_lock()
            self._remove_stale_bridge()
            ip("link", "add", self.bridge, "type", "bridge")
            self._made_bridge = True
            ip("addr", "add", f"{BRIDGE_ADDRESS}/{PREFIX}", "dev", self.bridge)
            ip("link", "set", self.bridge, "up")
            for host in self.hosts:
                ip("netns", "add", host.namespace)
                self._made.append(host)
                ip("link", "add", host.outer_interface, "type", "veth", "peer", "name",
                   INNER_INTERFACE, "netns", host.namespace)
                ip("link", "set", host.outer_interface, "master", self.bridge)
                ip("link", "set", host.outer_interface, "up")
                ip("-n", host.namespace, "addr", "add", f"{host.address}/{PREFIX}", "dev",
                   INNER_INTERFACE)
                ip("-n", host.namespace, "link", "set", INNER_INTERFACE, "up")
                ip("-n", host.namespace, "link", "set", "lo", "up")
            self._wait_for_carrier()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Delete the namespaces (and so their veth pairs) and the bridge. Idempotent; every
        step is tried even when one fails. Processes still inside a namespace keep it alive
        until they exit: kill them first."""
        try:
            for host in self._made:
                ip("link", "del", host.outer_interface, check=False)
                ip("netns", "del", host.namespace, check=False)
            self._made = []
            self._cuts.clear()
            if self._made_bridge:
                ip("link", "del", self.bridge, check=False)
                self._made_bridge = False
        finally:
            if self._lock is not None:
                os.close(self._lock)  # releases the flock
                self._lock = None

    def _take_lock(self) -> None:
        """One Segment at a time per machine: they all use SUBNET and BRIDGE_ADDRESS."""
        LOCK_PATH.parent.mkdir(parents=True, exist_ok=True)
        lock = os.open(LOCK_PATH, os.O_WRONLY | os.O_CREAT, 0o600)
        deadline = time.monotonic() + LOCK_TIMEOUT_SECS
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(lock)
                    raise NetnsError(f"another segment held {LOCK_PATH} for "
                                     f"{LOCK_TIMEOUT_SECS} s") from None
                time.sleep(0.5)
        self._lock = lock

    def _remove_stale_bridge(self) -> None:
        """A bridge of ours left by a run that was SIGKILLed (the lock proves it is not in use)
        would hold BRIDGE_ADDRESS; remove it."""
        links = json.loads(ip("-j", "addr", "show").stdout or "[]")
        for link in links:
            name = link.get("ifname", "")
            if name.startswith("brns") and any(a.get("local") == BRIDGE_ADDRESS
                                               for a in link.get("addr_info", [])):
                ip("link", "del", name, check=False)

    def _wait_for_carrier(self, timeout: float = 10.0) -> None:
        """Until every host's eth0 is up with a carrier (a veth comes up once both ends are)."""
        deadline = time.monotonic() + timeout
        for host in self.hosts:
            while "LOWER_UP" not in ip("-n", host.namespace, "link", "show",
                                       INNER_INTERFACE).stdout:
                if time.monotonic() > deadline:
                    raise NetnsError(f"{host.namespace}: {INNER_INTERFACE} has no carrier")
                time.sleep(0.05)

    # --- partitions -----------------------------------------------------------------------------

    def mac(self, index: int) -> str:
        """The real MAC address of host `index`'s eth0."""
        host = self.host(index)
        links = json.loads(ip("-n", host.namespace, "-j", "link", "show",
                              INNER_INTERFACE).stdout)
        return str(links[0]["address"])

    def cut(self, a: int, b: int) -> None:
        """Cut hosts `a` and `b` apart, both ways, silently: packets between them vanish, as
        over a cut cable. Each still reaches every other host and the root namespace."""
        for this, other in ((a, b), (b, a)):
            ip("-n", self.host(this).namespace, "neigh", "replace", self.host(other).address,
               "lladdr", BOGUS_MAC, "dev", INNER_INTERFACE, "nud", "permanent")
        self._cuts.add((min(a, b), max(a, b)))

    def heal(self, a: int, b: int) -> None:
        """Undo `cut(a, b)`: the bogus entries go, and ARP finds the real addresses again."""
        for this, other in ((a, b), (b, a)):
            ip("-n", self.host(this).namespace, "neigh", "del", self.host(other).address,
               "dev", INNER_INTERFACE, check=False)
        self._cuts.discard((min(a, b), max(a, b)))

    def heal_all(self) -> None:
        for a, b in list(self._cuts):
            self.heal(a, b)

    # --- probing ------------------------------------------------------------------------------

    def connect_from(self, index: int, address: str, port: int,
                     timeout: float = 2.0) -> str:
        """Try a TCP connect from host `index`'s namespace: "connected", "refused" (the host
        answered: nothing listens there), "timeout" (nothing answered) or "error: ...".

        Used to check the harness itself: across a cut a connect must time out, not fail at
        once."""
        code = ("import socket, sys\n"
                "try:\n"
                f"    socket.create_connection(({address!r}, {port}), timeout={timeout}).close()\n"
                "    print('connected')\n"
                "except ConnectionRefusedError:\n"
                "    print('refused')\n"
                "except (TimeoutError, socket.timeout):\n"
                "    print('timeout')\n"
                "except OSError as exc:\n"
                "    print('error:', exc)\n")
        done = subprocess.run([*self.host(index).exec_prefix(), "python3", "-c", code],
                              capture_output=True, text=True, timeout=timeout + 10)
        return done.stdout.strip() or f"error: {done.stderr.strip()}"


def listening_sockets_in_namespaces(pids: list[int]) -> list[tuple[int, str, int]]:
    """`(pid, address, port)` of every listening TCP socket `pids` hold, whichever network
    namespace each pid is in.

    brain.processes.listening_sockets reads /proc/net/tcp, which is the table of the *reading*
    process's namespace: from the root namespace it never sees a namespaced member's sockets.
    Here each pid's sockets are looked up in its own namespace's table (/proc/PID/net/tcp).
    """
    tables: dict[str, dict[int, tuple[str, int]]] = {}
    result = []
    for pid in pids:
        try:
            namespace = os.readlink(f"/proc/{pid}/ns/net")
            if namespace not in tables:
                tables[namespace] = {**_listening_table(f"/proc/{pid}/net/tcp"),
                                     **_listening_table(f"/proc/{pid}/net/tcp6")}
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        table = tables[namespace]
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and int(target[8:-1]) in table:
                result.append((pid, *table[int(target[8:-1])]))
    return result


HTTP_PORT = 3210
ACTOR_PORT = 7001


class NamespacedMember(MemberServer):
    """A convention member whose `brain serve` runs in its host's namespace on the segment.

    Every namespace has its own port space, so every member uses the same fixed ports; its
    host is its namespace's address, which is also its BRAIN_ACTOR_BIND. The leader's
    BRAIN_CONVENTION is then `10.231.0.1:7001` on every member.
    """

    def __init__(self, tmp_path: Path, name: str, host: Host,
                 leader: NamespacedMember | None = None) -> None:
        super().__init__(tmp_path, name, host.address, leader)
        self.netns = host
        self.port, self.actor_port = HTTP_PORT, ACTOR_PORT
        self.log_path = tmp_path / name / "serve.log"

    def command(self) -> list[str]:
        return [*self.netns.exec_prefix(), *super().command()]

    def start(self, attempts: int = 1) -> NamespacedMember:
        """Start once: the ports are fixed and the namespace's own, so nobody else takes them
        (BrainServer.start would retry on fresh root-namespace ports)."""
        self._start_once()
        return self

    def _serves_its_port(self) -> bool:
        assert self.proc is not None
        return any(port == self.port and address == self.host for _, address, port in
                   listening_sockets_in_namespaces(self.group_pids()))

    def group_pids(self) -> list[int]:
        assert self.proc is not None
        return group_pids(self.proc.pid)

    def listening(self) -> list[tuple[int, str, int]]:
        """Every listening socket of this member's process group, read in its namespace."""
        return listening_sockets_in_namespaces(self.group_pids())

