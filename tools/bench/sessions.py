"""Cost of a suspended session vs a resident one, and private memory per resident session.

Usage: python -m tools.bench.sessions [--turns 100] [--resident 20] [--gap-ms 50] [--record]

(1) Turn latency of a session released after every turn (the default: each turn opens the
checkpoint and creates the session actor) vs one created with `idle_ttl_ms: 0` (its actor stays),
alternating turns between the two, `--gap-ms` apart so a release can finish; p50/p99 of each and
their ratio. Baseline: the resident turn.
(2) Memory: create `--resident` sessions with `idle_ttl_ms: 0`, run one turn in each, and compare
the sum of USS (Private_Clean + Private_Dirty) and PSS of all server processes from
/proc/PID/smaps_rollup before and after, per session; plus the USS of each new process
(a session actor).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from tests.support.server import BrainServer, group_pids
from tools.bench.common import bench_server, loadavg, percentile, pss_kib, summary_ms, uss_kib
from tools.bench.ledger import add_record_flag, recorded

DEADLINE_SECS = 300.0


def snapshot(server: BrainServer) -> dict[int, tuple[int, int]]:
    assert server.proc is not None
    return {pid: (uss_kib(pid), pss_kib(pid)) for pid in group_pids(server.proc.pid)}


def released_vs_resident(server: BrainServer, turns: int, gap_ms: int,
                         **create: Any) -> tuple[list[float], list[float], list[int]]:
    """Seconds per sync turn of a default (released) session and a resident one, alternating.

    Both get one warm-up turn; `gap_ms` after each turn lets a release finish. Also returns the
    number of server processes seen before each released turn.
    """
    pgid = server.proc.pid  # type: ignore[union-attr]
    released = server.create_session(**create)["id"]
    kept = server.create_session(idle_ttl_ms=0, **create)["id"]
    server.send(released, "warm-up")
    server.send(kept, "warm-up")
    time.sleep(gap_ms / 1000)
    lat_released: list[float] = []
    lat_resident: list[float] = []
    procs_before_released: list[int] = []
    deadline = time.monotonic() + DEADLINE_SECS
    for i in range(turns):
        if time.monotonic() > deadline:
            break
        for sid, out in ((released, lat_released), (kept, lat_resident)):
            if sid == released:
                procs_before_released.append(len(group_pids(pgid)))
            start = time.perf_counter()
            result = server.send(sid, f"turn {i}")
            out.append(time.perf_counter() - start)
            if result["status"] != "ended":
                raise RuntimeError(f"turn did not end: {result}")
            time.sleep(gap_ms / 1000)
    return lat_released, lat_resident, procs_before_released


def run(turns: int, resident: int, gap_ms: int, record: bool = False) -> None:
    print(f"before: {loadavg()}")
    with bench_server() as server:
        pgid = server.proc.pid  # type: ignore[union-attr]
        lat_suspended, lat_resident, procs_before_suspended = released_vs_resident(
            server, turns, gap_ms)
        procs_after_turn = len(group_pids(pgid))

        time.sleep(0.5)
        before = snapshot(server)
        ids = [server.create_session(idle_ttl_ms=0)["id"] for _ in range(resident)]
        for sid in ids:
            server.send(sid, "hello")
        time.sleep(1.0)
        after = snapshot(server)

    p50s, p50r = percentile(lat_suspended, 0.5), percentile(lat_resident, 0.5)
    p99s, p99r = percentile(lat_suspended, 0.99), percentile(lat_resident, 0.99)
    print(f"suspended-session turn (open + actor): {summary_ms(lat_suspended)} "
          f"over {len(lat_suspended)} turns")
    print(f"resident-session turn (baseline):      {summary_ms(lat_resident)} "
          f"over {len(lat_resident)} turns")
    print(f"ratio suspended/resident: p50 {p50s / p50r:.2f}x, p99 {p99s / p99r:.2f}x; "
          f"extra per open p50 {(p50s - p50r) * 1000:.2f} ms")
    print(f"server processes before a suspended turn: min {min(procs_before_suspended)} "
          f"max {max(procs_before_suspended)}; after the loop {procs_after_turn}")

    new = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    uss_b = sum(v[0] for v in before.values())
    uss_a = sum(v[0] for v in after.values())
    pss_b = sum(v[1] for v in before.values())
    pss_a = sum(v[1] for v in after.values())
    print(f"server processes: {len(before)} before, {len(after)} after "
          f"({len(new)} new, {len(gone)} gone) for {resident} resident sessions")
    print(f"sum USS: {uss_b / 1024:.1f} -> {uss_a / 1024:.1f} MiB; "
          f"per resident session {(uss_a - uss_b) / resident / 1024:.2f} MiB")
    print(f"sum PSS: {pss_b / 1024:.1f} -> {pss_a / 1024:.1f} MiB; "
          f"per resident session {(pss_a - pss_b) / resident / 1024:.2f} MiB")
    if new:
        uss_new = [after[p][0] / 1024 for p in new]
        pss_new = [after[p][1] / 1024 for p in new]
        print(f"USS of each new (actor) process: median {statistics.median(uss_new):.2f} MiB, "
              f"min {min(uss_new):.2f}, max {max(uss_new):.2f}; PSS median "
              f"{statistics.median(pss_new):.2f} MiB")
    grown = sorted(((after[p][0] - before[p][0]) / 1024, p) for p in before if p in after)
    print(f"USS growth of pre-existing processes: total {sum(g for g, _ in grown):.2f} MiB, "
          f"largest {grown[-1][0]:.2f} MiB (pid {grown[-1][1]})" if grown else "")
    print(f"after: {loadavg()}")
    recorded("sessions", {
        "released_p50_ms": p50s * 1000, "released_p99_ms": p99s * 1000,
        "resident_p50_ms": p50r * 1000, "resident_p99_ms": p99r * 1000,
        "released_over_resident": p50s / p50r,
        "pss_per_resident_mib": (pss_a - pss_b) / resident / 1024,
        "new_process_uss_mib": statistics.median(after[p][0] / 1024 for p in new) if new else None,
    }, record)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--resident", type=int, default=20)
    parser.add_argument("--gap-ms", type=int, default=50)
    add_record_flag(parser, "sessions")
    args = parser.parse_args()
    run(args.turns, args.resident, args.gap_ms, args.record)


if __name__ == "__main__":
    main()
