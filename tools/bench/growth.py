"""How a session's turn latency grows with its conversation, on a real `brain serve`.

Usage: python -m tools.bench.growth [--turns 400] [--bucket 50]

One session (the default release policy: every turn reopens it) takes `--turns` sequential sync
turns of the compare's scripted text model (tools/bench/workload.py: each turn adds a user
message and a 512-byte answer). Prints the median latency of every `--bucket` turns, and the
p50 of the first 200 turns, which is what the compare's single-session arm measures. A turn
whose cost grows with the transcript shows as a rising median; the compare's p50 is a turn
near the hundredth.
"""

from __future__ import annotations

import argparse
import statistics
import time

from tools.bench.common import bench_server, loadavg, percentile
from tools.bench.turns import send
from tools.bench.workload import TEXT_MODEL, brain_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--bucket", type=int, default=50)
    args = parser.parse_args()
    with bench_server(config=brain_config()) as server:
        sid = server.create_session(model=TEXT_MODEL)["id"]
        send(server, sid, "warm-up")
        latencies = []
        for i in range(args.turns):
            began = time.perf_counter()
            if send(server, sid, f"turn {i}") is None:
                raise SystemExit(f"turn {i} hung")
            latencies.append(time.perf_counter() - began)
    for start in range(0, args.turns, args.bucket):
        chunk = latencies[start:start + args.bucket]
        print(f"turns {start:4d}-{start + len(chunk) - 1:4d}: median "
              f"{statistics.median(chunk) * 1000:6.2f} ms")
    print(f"p50 of the first 200 turns: {percentile(latencies[:200], 0.5) * 1000:.2f} ms; "
          f"{loadavg()}")


if __name__ == "__main__":
    main()
