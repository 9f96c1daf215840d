"""Sync text-turn latency and throughput against a real `brain serve`, vs the disk's fsync rate.

Usage: python -m tools.bench.turns [--turns 200] [--sessions 16] [--per-session 20]

Prints p50/p99 latency over sequential turns in one session, turns/s over concurrent sessions,
fsyncs per turn (journal commits counted from the records a turn writes) and the ratio of the
turn rate to the raw fdatasync ceiling of the same data dir, measured in the same run.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from tests.support.server import BrainServer
from tools.bench.common import raw_fdatasync_rate, summary_ms

# Commits of one default-loop text turn: [turn_started+activation_started], transcript_changed
# (user), model_call_started, model_call_ended, transcript_changed (assistant),
# [activation_ended+turn_ended].
COMMITS_PER_TEXT_TURN = 6


def run(turns: int, sessions: int, per_session: int) -> None:
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        fsync_rate = raw_fdatasync_rate(data)
        server = BrainServer(data).start()
        try:
            sid = server.create_session()["id"]
            server.send(sid, "warm-up")
            latencies = []
            for i in range(turns):
                start = time.perf_counter()
                server.send(sid, f"turn {i}")
                latencies.append(time.perf_counter() - start)
            events = server.events(sid)
            commits = len({(e["sequence"]) for e in events})
            ids = [server.create_session()["id"] for _ in range(sessions)]
            errors: list[BaseException] = []

            def drive(session_id: str) -> None:
                try:
                    for i in range(per_session):
                        server.send(session_id, f"parallel {i}")
                except BaseException as exc:  # reported below
                    errors.append(exc)

            threads = [threading.Thread(target=drive, args=(s,)) for s in ids]
            start = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=600)
            elapsed = time.perf_counter() - start
        finally:
            server.kill()
    if errors:
        raise SystemExit(f"benchmark failed: {errors[0]!r}")
    total = sessions * per_session
    turn_rate = total / elapsed
    ceiling = fsync_rate / COMMITS_PER_TEXT_TURN
    print(f"raw fdatasync ceiling:       {fsync_rate:,.0f} appends/s (same data dir)")
    print(f"sequential sync text turns:  {summary_ms(latencies)} over {turns} turns")
    print(f"sequential turns/s:          {turns / sum(latencies):,.1f}")
    print(f"concurrent: {sessions} sessions x {per_session} turns: {turn_rate:,.1f} turns/s")
    print(f"fsyncs per text turn:        {COMMITS_PER_TEXT_TURN} (public events seen: {commits})")
    print(f"turn rate / fsync ceiling ({ceiling:,.0f} turns/s): {turn_rate / ceiling:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--per-session", type=int, default=20)
    args = parser.parse_args()
    run(args.turns, args.sessions, args.per_session)


if __name__ == "__main__":
    main()
