"""Two actors that exchange bursts of messages, for the Thespian socket-reuse stress test.

The pinger sends a burst of pings to the ponger, which answers each with a pong; the pinger
starts the next burst only when every pong of this one is in, and tells the asker when all
rounds are done. Both directions use one actor pair, so each side both opens connections and
receives them: the pattern in which Thespian 4.0.1 closes an idle connection the other side has
just chosen for its next message.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from thespian.actors import Actor, ActorAddress, WakeupMessage


@dataclass
class StartBursts:
    ponger: ActorAddress
    burst: int
    rounds: int
    payload_bytes: int = 0


@dataclass
class Ping:
    round: int
    index: int
    payload: bytes = field(default=b"", repr=False)


@dataclass
class Pong:
    round: int
    index: int


@dataclass
class BurstsDone:
    pongs: int


class Ponger(Actor):
    """Answers each ping after a short, varying delay, as an executor answers from its threads."""

    def receiveMessage(self, message: Any, sender: ActorAddress) -> None:
        if isinstance(message, Ping):
            delay = timedelta(milliseconds=(message.index * 7 + message.round) % 4)
            self.wakeupAfter(delay, payload=(sender, Pong(message.round, message.index)))
        elif isinstance(message, WakeupMessage):
            sender_of_ping, pong = message.payload
            self.send(sender_of_ping, pong)


class Pinger(Actor):
    def receiveMessage(self, message: Any, sender: ActorAddress) -> None:
        if isinstance(message, StartBursts):
            self.plan, self.asker, self.pongs, self.round = message, sender, 0, 0
            self.pending: set[int] = set()
            self._burst()
        elif isinstance(message, Pong) and message.round == self.round:
            self.pending.discard(message.index)
            self.pongs += 1
            if not self.pending:
                self.round += 1
                if self.round == self.plan.rounds:
                    self.send(self.asker, BurstsDone(self.pongs))
                else:
                    self._burst()

        elif isinstance(message, WakeupMessage) and message.payload == self.round:
            self._send_ping()

    def _burst(self) -> None:
        """Send the round's pings a millisecond apart, so that pongs cross them on the wire."""
        self.pending = set(range(self.plan.burst))
        self.next_index = 0
        self._send_ping()

    def _send_ping(self) -> None:
        self.send(self.plan.ponger, Ping(self.round, self.next_index,
                                         bytes(self.plan.payload_bytes)))
        self.next_index += 1
        if self.next_index < self.plan.burst:
            self.wakeupAfter(timedelta(milliseconds=1), payload=self.round)


def run_bursts(pairs: int, rounds: int, burst: int, payload_bytes: int,
               deadline_s: float) -> dict[str, float]:
    """Start an actor system confined as Brain confines it, run the bursts, shut it down."""
    from thespian.actors import ActorSystem

    from brain.actors.thespian.confine import confine_thespian
    from brain.ports import free_port

    confine_thespian("127.0.0.1")
    system = ActorSystem("multiprocTCPBase", {"Admin Port": free_port("127.0.0.1")})
    try:
        ponger = system.createActor(Ponger)
        pingers = [system.createActor(Pinger) for _ in range(pairs)]
        started = time.monotonic()
        for pinger in pingers:
            system.tell(pinger, StartBursts(ponger, burst, rounds, payload_bytes))
        done, pongs = 0, 0
        while done < pairs and time.monotonic() - started < deadline_s:
            answer = system.listen(timedelta(seconds=0.5))
            if isinstance(answer, BurstsDone):
                done, pongs = done + 1, pongs + answer.pongs
        return {"done": done, "pongs": pongs, "seconds": time.monotonic() - started}
    finally:
        system.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description="bursts between two real Thespian actors")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--burst", type=int, default=4)
    parser.add_argument("--payload-bytes", type=int, default=2_000_000)
    parser.add_argument("--deadline-s", type=float, default=15.0)
    args = parser.parse_args()
    print(json.dumps(run_bursts(args.pairs, args.rounds, args.burst, args.payload_bytes,
                                args.deadline_s)), flush=True)


if __name__ == "__main__":
    main()
