"""What signing and checking every actor frame costs, against an actor ask() round trip.

Usage: python -m tools.bench.actor_auth [--asks 2000] [--rounds 2]

Why: every Thespian frame Brain sends now carries an HMAC-SHA256 of its pickle, and every frame
received is checked before it is unpickled (brain/actors/thespian/auth.py). This prints what
that adds per message, and sets it beside what one message already costs.

Measured in one run:
- `sign+check`, in this process: signing a message's pickle and checking the signed body, as
  the sender's and the receiver's transport do, per message, for the `EffectDone` an executor
  sends for a text turn (a 512-byte model answer) and for larger messages;
- `ask`, each arm in a subprocess of its own (patches are per process), alternated in rounds:
  an `ActorSystem().ask()` of an echoing actor of a `multiprocTCPBase` system with Brain's
  patches, without (`brain`) and with (`brain+auth`) the signing; wall time per ask and the CPU
  (user + system) of the asking and the echoing process per ask. One ask is four frames: the
  message, its acknowledgement, the answer and its acknowledgement.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.support.server import free_port
from tools.bench.actor_messages import Echo, cpu_seconds, sample_message
from tools.bench.common import loadavg

ROOT = Path(__file__).resolve().parents[2]
ARMS = ("brain", "brain+auth")
SIZES = {"EffectDone (512-byte answer)": None, "64 KiB": 64 << 10, "1 MiB": 1 << 20}


def sign_and_check_us(payload: bytes, repeats: int) -> float:
    """Microseconds to sign `payload` and check the signed body once, as the two ends do."""
    from brain.actors.thespian.auth import sign, verified_payload

    secret = secrets.token_bytes(32)
    began = time.perf_counter()
    for _ in range(repeats):
        if verified_payload(secret, sign(secret, payload)) is None:
            raise SystemExit("a body signed here did not check")
    return (time.perf_counter() - began) / repeats * 1e6


def check_us(payload: bytes, repeats: int) -> float:
    """Microseconds to check a body signed from `payload` (a receiver's share alone)."""
    from brain.actors.thespian.auth import sign, verified_payload

    secret = secrets.token_bytes(32)
    body = sign(secret, payload)
    began = time.perf_counter()
    for _ in range(repeats):
        verified_payload(secret, body)
    return (time.perf_counter() - began) / repeats * 1e6


def ask_arm(asks: int, authenticated: bool) -> dict[str, float]:
    from thespian.actors import ActorSystem

    from brain.actors.thespian.confine import confine_thespian
    from brain.actors.thespian.fit import check_thespian
    from brain.actors.thespian.speedups import speed_up_message_path

    check_thespian()
    confine_thespian("127.0.0.1")
    speed_up_message_path()  # as brain/actors/system/boot.py applies them
    if authenticated:
        from brain.actors.thespian.auth import authenticate_actor_messages

        authenticate_actor_messages(secrets.token_bytes(32))
    system = ActorSystem("multiprocTCPBase", {"Admin Port": free_port()})
    try:
        echo = system.createActor(Echo)
        pids = [os.getpid(), system.ask(echo, "pid", 30)]
        message = sample_message()
        for _ in range(200):  # warm-up: connections open, caches filled
            system.ask(echo, message, 30)
        each = []
        cpu = cpu_seconds(pids)
        for _ in range(asks):
            began = time.perf_counter()
            if system.ask(echo, message, 30) is None:
                raise SystemExit("an ask went unanswered")
            each.append(time.perf_counter() - began)
        cpu = cpu_seconds(pids) - cpu
    finally:
        system.shutdown()
    return {"median_us": statistics.median(each) * 1e6, "mean_us": sum(each) / asks * 1e6,
            "cpu_us": cpu / asks * 1e6}


def run_arm(arm: str, asks: int) -> dict[str, float]:
    """One arm in a fresh interpreter (Thespian's patches cannot be taken back)."""
    done = subprocess.run([sys.executable, "-m", "tools.bench.actor_auth", "--arm", arm,
                           "--asks", str(asks)], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"arm {arm} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)  # one arm, as JSON
    args = parser.parse_args()
    if args.arm is not None:
        print(json.dumps(ask_arm(args.asks, authenticated=args.arm == "brain+auth")))
        return
    print(f"before: {loadavg()}")
    print("sign+check per message (this process, 32-byte key, HMAC-SHA256):")
    small = 0.0
    for name, size in SIZES.items():
        payload = pickle.dumps(sample_message() if size is None else bytes(size))
        repeats = max(20, min(20_000, (200 << 20) // len(payload)))
        cost = sign_and_check_us(payload, repeats)
        small = small or cost
        print(f"  {name:30} {len(payload):>9} bytes {cost:9.2f} us")
    results: dict[str, list[dict[str, float]]] = {arm: [] for arm in ARMS}
    for _ in range(args.rounds):
        for arm in ARMS:
            results[arm].append(run_arm(arm, args.asks))
    print(f"ask() round trip of an echoing actor, {args.asks} asks per arm, {args.rounds} "
          "rounds alternated, medians of the rounds:")
    summary = {}
    for arm in ARMS:
        summary[arm] = {key: statistics.median(r[key] for r in results[arm])
                        for key in ("median_us", "mean_us", "cpu_us")}
        rounds = ", ".join(f"{r['median_us']:.0f}" for r in results[arm])
        print(f"  {arm:11} wall {summary[arm]['median_us']:8.1f} us (median), "
              f"{summary[arm]['mean_us']:8.1f} us (mean); CPU of both processes "
              f"{summary[arm]['cpu_us']:8.1f} us  (round medians: {rounds})")
    # Two messages signed and checked; two acknowledgements checked (signed once, at start).
    expected = 2 * small + 2 * check_us(pickle.dumps("ACK"), 20_000)
    wall = summary["brain+auth"]["median_us"] - summary["brain"]["median_us"]
    cpu = summary["brain+auth"]["cpu_us"] - summary["brain"]["cpu_us"]
    print(f"per ask (4 frames) sign+check predicts {expected:.1f} us, "
          f"{expected / summary['brain']['median_us']:.1%} of the ask; measured difference "
          f"{wall:+.1f} us wall, {cpu:+.1f} us CPU (the machine's noise may exceed it)")
    print(f"after: {loadavg()}")


if __name__ == "__main__":
    main()
