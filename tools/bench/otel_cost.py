"""What BRAIN_OTEL costs a turn: the text arm (one model call answering 512 bytes) against a
server with OpenTelemetry off and one with it on, alternated in rounds within one run.

Usage: python -m tools.bench.otel_cost [--rounds 6] [--turns 20]

The "on" server exports to an OTLP/HTTP sink in this process that accepts and counts every
batch (so the export's cost is paid, not a failed connection's), with a 200 ms batch delay.
Each arm runs its turns in one session. Prints p50/p99 per arm and the median of per-round
on/off p50 ratios; the target is at most 1.10x.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tools.bench.common import bench_server, loadavg, summary_ms
from tools.bench.turns import alternated_rounds, send
from tools.bench.workload import TEXT_MODEL, brain_config

TARGET_RATIO = 1.10


class Sink:
    """An OTLP/HTTP endpoint that answers 200 to every export and counts the bytes."""

    def __init__(self) -> None:
        self.batches = 0
        self.bytes = 0
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                sink.batches += 1
                sink.bytes += len(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    sink = Sink()
    with contextlib.ExitStack() as stack:
        stack.callback(sink.close)
        arms = {"off": {}, "on": {"BRAIN_OTEL": "1", "OTEL_SERVICE_NAME": "brain-bench",
                                  "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
                                  "OTEL_BSP_SCHEDULE_DELAY": "200"}}
        servers = {arm: stack.enter_context(bench_server(env, brain_config()))
                   for arm, env in arms.items()}
        sids = {arm: s.create_session(model=TEXT_MODEL)["id"] for arm, s in servers.items()}
        for arm, server in servers.items():  # warm both: executors, pool, exporter
            for i in range(3):
                send(server, sids[arm], f"warm {i}")
        samples, rounds = alternated_rounds(servers, sids, args.rounds, args.turns)
        time.sleep(0.5)  # the last batch reaches the sink
    print(f"load {loadavg()}; {args.rounds * args.turns} text turns per arm, "
          f"{args.rounds} alternated rounds")
    for arm in samples:
        print(f"  otel {arm:>3}: {summary_ms(samples[arm])}")
    ratio = statistics.median(r["on"] / r["off"] for r in rounds)
    verdict = "within" if ratio <= TARGET_RATIO else "over"
    print(f"  on/off, median of per-round p50 ratios: {ratio:.3f}x ({verdict} the "
          f"{TARGET_RATIO:.2f}x target); {sink.batches} export batches, "
          f"{sink.bytes / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
