"""Two versions of Brain, one turn each in turn: a single-session p50 ratio the CPU's swings
cannot fake.

Usage: python -m tools.bench.interleaved OLD_TREE NEW_TREE [--turns 300] [--rounds 2]

Each tree is a checkout of this repository (`git worktree add /tmp/old COMMIT`). For every
round two `brain serve` run side by side, one per tree, each with one session of the compare's
scripted text model, and the client alternates sequential sync turns between them (which one
goes first alternates too). Minutes of a slower CPU then slow both alike.

Each server runs in its own tree's directory: `python -m brain.cli` puts the working directory
first on `sys.path`, so a `PYTHONPATH` alone would run the caller's tree twice.

Two servers are not symmetric: on this machine the one started second measured ~4 % faster
when both ran the same code. So the rounds alternate which tree starts first, and the ratio
printed last is the geometric mean over rounds, in which that bias cancels; each round's ratio
is printed too.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.server import BrainServer
from tools.bench.common import loadavg
from tools.bench.turns import send
from tools.bench.workload import TEXT_MODEL, brain_config

WARM_UP_TURNS = 10


@contextlib.contextmanager
def tree_server(tree: Path) -> Iterator[BrainServer]:
    """A started `brain serve` of the code in `tree`, on a fresh data dir; always killed."""
    with tempfile.TemporaryDirectory(prefix="brain-interleaved-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        config = Path(tmp) / "brain.toml"
        config.write_text(brain_config())
        server = BrainServer(data, env={"PYTHONPATH": str(tree), "BRAIN_CONFIG": str(config)},
                             cwd=tree).start()
        try:
            yield server
        finally:
            server.kill()


def one_round(first: Path, second: Path, turns: int) -> tuple[float, float]:
    """p50 seconds of (first, second), measured turn by turn in alternation."""
    with tree_server(first) as a, tree_server(second) as b:
        sessions = [(a, a.create_session(model=TEXT_MODEL)["id"], []),
                    (b, b.create_session(model=TEXT_MODEL)["id"], [])]
        for i in range(WARM_UP_TURNS):
            for server, sid, _ in sessions:
                send(server, sid, f"warm-up {i}")
        for i in range(turns):
            order = sessions if i % 2 == 0 else sessions[::-1]
            for server, sid, latencies in order:
                began = time.perf_counter()
                if send(server, sid, f"turn {i}") is None:
                    raise SystemExit(f"{server.cwd}: turn {i} hung")
                latencies.append(time.perf_counter() - began)
        return statistics.median(sessions[0][2]), statistics.median(sessions[1][2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    old, new = args.old.resolve(), args.new.resolve()
    ratios = []
    for index in range(args.rounds):
        new_first = index % 2 == 1
        if new_first:
            p_new, p_old = one_round(new, old, args.turns)
        else:
            p_old, p_new = one_round(old, new, args.turns)
        ratios.append(p_new / p_old)
        print(f"round {index + 1} ({'new' if new_first else 'old'} started first): "
              f"p50 old {p_old * 1000:.2f} ms, new {p_new * 1000:.2f} ms, "
              f"new/old {p_new / p_old:.3f}; {loadavg()}")
    mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"new/old p50, geometric mean of {len(ratios)} rounds: {mean:.3f}")


if __name__ == "__main__":
    main()
