"""What serving a session through another member's front end costs (docs/several-hosts.md).

Two members of one convention on 127.0.0.2 and 127.0.0.3. In each round, alternating, the same
request is timed through the front end of the member holding the session (direct) and through
the other one (forwarded over HTTP): an events page, and a synchronous turn with the scripted
model. Creates through one front end are timed and split by where they were placed (its own
member, or the other one through Thespian). Usage: `python -m tools.bench.several_hosts`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.convention import MemberServer, knows
from tests.support.waiting import wait_for
from tools.bench.common import percentile


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def report(name: str, samples: list[float]) -> None:
    print(f"{name:34s} n={len(samples):4d} p50={statistics.median(samples):7.2f} ms "
          f"p95={percentile(samples, 0.95):7.2f} ms")


def run(rounds: int, reads: int, turns: int, creates: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        leader = MemberServer(Path(tmp), "a", "127.0.0.2")
        member = MemberServer(Path(tmp), "b", "127.0.0.3", leader)
        try:
            leader.start()
            member.start()
            wait_for(lambda: knows(leader, "b") and knows(member, "a"), timeout=30)
            created: dict[str, list[float]] = {"a": [], "b": []}
            for _ in range(creates):
                sid = ""

                def create() -> None:
                    nonlocal sid
                    sid = leader.create_session()["id"]

                elapsed = timed(create)
                created[sid.rsplit("-", 1)[1]].append(elapsed)
            session = next(s for s in (leader.create_session()["id"] for _ in range(4))
                           if s.endswith("-a"))
            leader.send(session, "warm up")
            samples: dict[str, list[float]] = {k: [] for k in
                                               ("read direct", "read forwarded",
                                                "turn direct", "turn forwarded")}
            for _ in range(rounds):
                for _ in range(reads):
                    samples["read direct"].append(timed(lambda: leader.events(session)))
                    samples["read forwarded"].append(timed(lambda: member.events(session)))
                for _ in range(turns):
                    samples["turn direct"].append(timed(lambda: leader.send(session, "hi")))
                    samples["turn forwarded"].append(timed(lambda: member.send(session, "hi")))
            report("create placed on its own member", created["a"])
            report("create placed on the other member", created["b"])
            for name, values in samples.items():
                report(f"{name} (events page)" if name.startswith("read") else
                       f"{name} (sync turn)", values)
        finally:
            member.kill()
            leader.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reads", type=int, default=40)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--creates", type=int, default=40)
    args = parser.parse_args()
    run(args.rounds, args.reads, args.turns, args.creates)


if __name__ == "__main__":
    main()
