"""CPU per actor message: Thespian's, with and without Brain's patches, against a raw socket.

Usage: python -m tools.bench.actor_messages [--messages 4000] [--rounds 2]

Why: a turn that waits on its model crosses Brain's processes as Thespian messages (web worker
to registry, registry to a session actor, the effect to its executor, the outcome back through
the registry, the reply, two releases: about nine in a traced 400-session run), so the CPU of
one message, times nine, is a floor under a waiting turn's cost that no change inside an actor
can lower. This prints that floor.

Arms, each in a subprocess of its own (Thespian's patches are per process), alternated in
rounds:
- `raw` (the baseline): two processes hand the same pickled message back and forth over one
  loopback TCP connection, each blocking in `recv`: the least it costs to give a Python object
  to another process.
- `thespian`: two actors of a `multiprocTCPBase` system, as Thespian 4.0.1 ships.
- `brain`: the same with the patches Brain's actor processes apply at start
  (docs/thespian-patches.md), frame signing included (one secret, made for the run).
The message is the `EffectDone` an executor sends for a text turn (a 512-byte model answer).
Measured: the CPU (user + system, `/proc/PID/stat`) of the two processes that exchange the
messages, divided by the messages; and wall time per message. Kernel work on loopback is in the
system time of the processes that cause it.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from thespian.actors import Actor

from brain.procstat import CLOCK_TICK_SECS, read_stat
from tests.support.server import free_port
from tools.bench.common import loadavg

ROOT = Path(__file__).resolve().parents[2]
ARMS = ("raw", "thespian", "brain")
MESSAGES_PER_WAITING_TURN = 9  # Thespian messages of a waiting turn, n400 traced (see above)
# Server CPU per turn that n400's efficiency target needs: its wall is at least 2 x D + N x c / CPUs
# (K = 2; docs/benchmarks.md, `fleet`), and 0.8 leaves 1 s of the 5 s for N x c / CPUs.
N400_BUDGET_MS = 5.0
_LENGTH = struct.Struct("!I")


def sample_message() -> Any:
    from brain.effects import Outcome
    from brain.protocol.effects import EffectDone

    answer = {"role": "assistant", "content": [{"type": "text", "text": "x" * 512}]}
    return EffectDone("01a246e5edd99973482fe4a8811c5860", 5, Outcome.OK,
                      {"message": answer, "stop_reason": "end_turn",
                       "usage": {"input_tokens": 2, "output_tokens": 3}})


def cpu_seconds(pids: list[int]) -> float:
    return sum(read_stat(pid).cpu_ticks for pid in pids) * CLOCK_TICK_SECS


# --- raw: one loopback connection, length-prefixed pickles -------------------------------------

def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("peer closed")
        data += chunk
    return data


def _receive(sock: socket.socket) -> Any:
    (size,) = _LENGTH.unpack(_read_exactly(sock, _LENGTH.size))
    return pickle.loads(_read_exactly(sock, size))


def _send(sock: socket.socket, message: Any) -> None:
    data = pickle.dumps(message)
    sock.sendall(_LENGTH.pack(len(data)) + data)


def raw_arm(messages: int) -> dict[str, float]:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    child = os.fork()
    if child == 0:  # the echoing side
        listener.close()
        try:
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                while True:
                    message = _receive(sock)
                    if message is None:
                        break
                    _send(sock, message)
        finally:
            os._exit(0)
    sock, _ = listener.accept()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    message = sample_message()
    for _ in range(200):  # warm-up
        _send(sock, message)
        _receive(sock)
    pids = [os.getpid(), child]
    cpu, wall = cpu_seconds(pids), time.perf_counter()
    for _ in range(messages // 2):
        _send(sock, message)
        _receive(sock)
    wall, cpu = time.perf_counter() - wall, cpu_seconds(pids) - cpu
    _send(sock, None)
    sock.close()
    os.waitpid(child, 0)
    return {"cpu_ms": cpu / messages * 1000, "wall_ms": wall / messages * 1000}


# --- Thespian: two actors ping-pong --------------------------------------------------------------

class Echo(Actor):
    """Sends every message back to whoever sent it."""

    def receiveMessage(self, message: Any, sender: Any) -> None:
        if message == "pid":
            self.send(sender, os.getpid())
        elif not isinstance(message, (str, tuple)):
            self.send(sender, message)


class Player(Actor):
    """Bounces a message off an Echo a given number of times, then tells the asker."""

    def receiveMessage(self, message: Any, sender: Any) -> None:
        if message == "pid":
            self.send(sender, os.getpid())
        elif isinstance(message, tuple) and message[0] == "play":
            self.left, self.client, self.peer = message[1], sender, message[2]
            self.send(self.peer, message[3])
        elif not isinstance(message, (str, tuple)):
            self.left -= 1
            if self.left > 0:
                self.send(self.peer, message)
            else:
                self.send(self.client, "done")


def _apply_brain_patches() -> None:
    from brain.actors.thespian.auth import authenticate_actor_messages
    from brain.actors.thespian.confine import confine_thespian
    from brain.actors.thespian.fit import check_thespian
    from brain.actors.thespian.speedups import speed_up_message_path

    check_thespian()
    confine_thespian("127.0.0.1")
    speed_up_message_path()  # as brain/actors/system/boot.py applies them
    authenticate_actor_messages(os.urandom(32))  # every frame signed and checked, as in Brain


def thespian_arm(messages: int, patched: bool) -> dict[str, float]:
    from thespian.actors import ActorSystem

    if patched:
        _apply_brain_patches()
    system = ActorSystem("multiprocTCPBase", {"Admin Port": free_port()})
    try:
        echo, player = system.createActor(Echo), system.createActor(Player)
        pids = [system.ask(echo, "pid", 30), system.ask(player, "pid", 30)]
        message = sample_message()
        if system.ask(player, ("play", 200, echo, message), 60) != "done":  # warm-up
            raise SystemExit("the warm-up exchange did not finish")
        cpu, wall = cpu_seconds(pids), time.perf_counter()
        if system.ask(player, ("play", messages // 2, echo, message), 600) != "done":
            raise SystemExit("the exchange did not finish in 600 s")
        wall, cpu = time.perf_counter() - wall, cpu_seconds(pids) - cpu
    finally:
        system.shutdown()
    return {"cpu_ms": cpu / messages * 1000, "wall_ms": wall / messages * 1000}


def run_arm(arm: str, messages: int) -> dict[str, float]:
    """One arm in a fresh interpreter (Thespian's patches cannot be taken back)."""
    done = subprocess.run([sys.executable, "-m", "tools.bench.actor_messages", "--arm", arm,
                           "--messages", str(messages)], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"arm {arm} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)  # one arm, as JSON
    args = parser.parse_args()
    if args.arm == "raw":
        print(json.dumps(raw_arm(args.messages)))
        return
    if args.arm is not None:
        print(json.dumps(thespian_arm(args.messages, patched=args.arm == "brain")))
        return
    print(f"before: {loadavg()}")
    results: dict[str, list[dict[str, float]]] = {arm: [] for arm in ARMS}
    for _ in range(args.rounds):
        for arm in ARMS:
            results[arm].append(run_arm(arm, args.messages))
    cpu = {arm: statistics.median(r["cpu_ms"] for r in rows) for arm, rows in results.items()}
    wall = {arm: statistics.median(r["wall_ms"] for r in rows) for arm, rows in results.items()}
    print(f"{args.messages} messages per arm (an EffectDone with a 512-byte answer), "
          f"{args.rounds} rounds alternated, medians:")
    print(f"  {'arm':10} {'CPU/message':>12} {'x raw':>7} {'wall/message':>13}  rounds (CPU)")
    for arm in ARMS:
        rounds = ", ".join(f"{r['cpu_ms']:.3f}" for r in results[arm])
        print(f"  {arm:10} {cpu[arm]:9.3f} ms {cpu[arm] / cpu['raw']:6.1f}x "
              f"{wall[arm]:10.3f} ms  ({rounds})")
    floor = cpu["brain"] * MESSAGES_PER_WAITING_TURN
    print(f"a waiting turn's ~{MESSAGES_PER_WAITING_TURN} messages at Brain's rate: "
          f"{floor:.2f} ms of CPU, against the {N400_BUDGET_MS} ms a turn n400's efficiency "
          f"target allows ({floor / N400_BUDGET_MS:.0%} of it)")
    print(f"after: {loadavg()}")


if __name__ == "__main__":
    main()
