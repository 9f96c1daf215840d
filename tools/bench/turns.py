"""Sync turn latency and throughput against a real `brain serve`, vs the disk's fsync rate.

Usage: python -m tools.bench.turns [--arm text|tools] [--turns 200] [--sessions 16]
                                   [--per-session 20] [--resident] [--record]

`--arm text` (default): p50/p99 latency over sequential text turns in one session, then turns/s
over concurrent sessions. `--arm tools`: every turn is 2 model rounds of 4 parallel `echo` tool
calls, then a text answer (a scripted model); reports turns/s and tool calls/s. Sessions use
the default idle policy (released after every turn, so each turn reopens the session) unless
`--resident` creates them with `idle_ttl_ms: 0`. A sync send with no reply in 30 s is reported
as a hung turn and its session is driven no further.

Both arms print the fsyncs (journal commits = batches) per turn, counted from the session
journals with JournalScan, and the ratio of the turn rate to the raw fdatasync ceiling of the
same data dir divided by that count, measured in the same run, and the load average.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from brain.client.errors import RequestTimeout
from brain.client.transport import Timeouts, Transport
from brain.protocol.records import TOOL_CALL_ENDED
from tests.support.server import BrainServer, group_pids
from tools.bench.common import (
    journal_batches_per_turn,
    loadavg,
    percentile,
    raw_fdatasync_rate,
    summary_ms,
)
from tools.bench.ledger import add_record_flag, recorded

TOOL_CONFIG = """
[models.tooluser]
provider = "scripted"
script = [
  { tool_calls = [ { name = "echo", input = { i = 1 } }, { name = "echo", input = { i = 2 } },
                   { name = "echo", input = { i = 3 } }, { name = "echo", input = { i = 4 } } ] },
  { tool_calls = [ { name = "echo", input = { i = 5 } }, { name = "echo", input = { i = 6 } },
                   { name = "echo", input = { i = 7 } }, { name = "echo", input = { i = 8 } } ] },
  { text = "done" },
]
"""
TOOL_CALLS_PER_TURN = 8
DEADLINE_SECS = 600.0
SEND_TIMEOUT_SECS = 30.0


WARM_UP_TURNS = 3
"""Untimed turns per session, all sessions at once, before a timed concurrent run. Brain's warm
pool grows to the concurrency on first use (a session whose actor is still out waits for one to
come back, or for a fork, and the registry paces its forks at about four a second under load),
so `settle` repeats them until two rounds in a row start no process: three rounds alone left up
to seven forks inside the first timed blocks."""
SETTLE_ROUNDS = 10
"""At most this many warm-up rounds (see `settle`)."""


def transport(server: BrainServer) -> Transport:
    """The keep-alive HTTP connections of Brain's own client SDK (brain/client), one pool per
    server: the turn is measured as a client that keeps its connection open meets it, not
    through a new TCP connection and a `requests` session per turn."""
    with _transports_lock:
        found = _transports.get(server.url)
        if found is None:
            found = _transports[server.url] = Transport(
                server.url, {"Authorization": f"Bearer {server.token}",
                             "Content-Type": "application/json"},
                Timeouts(request=SEND_TIMEOUT_SECS), max_idle=64)
        return found


_transports: dict[str, Transport] = {}
_transports_lock = threading.Lock()


def send(server: BrainServer, sid: str, text: str) -> dict | None:
    """One sync turn; None when no reply came within SEND_TIMEOUT_SECS (a hung turn)."""
    try:
        resp = transport(server).request("POST", f"/v1/sessions/{sid}/messages",
                                         body=json.dumps({"input": text}).encode())
    except RequestTimeout:
        return None
    if resp.status != 200:
        raise RuntimeError(f"send: {resp.status} {resp.body[:300]!r}")
    result = resp.json()
    if result.get("status") != "ended":
        raise RuntimeError(f"turn did not end: {result}")
    return result


def batches(server: BrainServer, sids: list[str]) -> list[int]:
    counts: list[int] = []
    for sid in sids:
        counts += journal_batches_per_turn(server.data_dir / "sessions" / sid / "journal")
    return counts


def count_tool_calls(server: BrainServer, sids: list[str]) -> int:
    from brain.journal import JournalScan

    total = 0
    for sid in sids:
        for frame in JournalScan(server.data_dir / "sessions" / sid / "journal"):
            if frame.record["kind"] == TOOL_CALL_ENDED and frame.record.get("outcome") == "ok":
                total += 1
    return total


def sequential_turns(server: BrainServer, sid: str, turns: int,
                     deadline: float) -> tuple[list[float], list[str]]:
    """Seconds per sync turn of `turns` turns in one session; stops at the first hung turn."""
    latencies: list[float] = []
    hung: list[str] = []
    for i in range(turns):
        if time.monotonic() > deadline:
            break
        start = time.perf_counter()
        if send(server, sid, f"turn {i}") is None:
            hung.append(f"sequential session, turn {i}")
            break
        latencies.append(time.perf_counter() - start)
    return latencies, hung


@dataclass
class ConcurrentRun:
    """Sessions driven at once, one thread each: completed turns up to the last completion."""

    turns: int
    elapsed: float
    hung: list[str] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.turns / self.elapsed if self.elapsed > 0 else 0.0


def concurrent_turns(server: BrainServer, ids: list[str], per_session: int,
                     deadline: float) -> ConcurrentRun:
    """One thread per session, each sending `per_session` sync turns back to back."""
    finished: list[float] = []
    hung: list[str] = []
    errors: list[BaseException] = []

    def drive(session_id: str) -> None:
        try:
            for i in range(per_session):
                if time.monotonic() > deadline:
                    raise TimeoutError("benchmark deadline")
                if send(server, session_id, f"parallel {i}") is None:
                    hung.append(f"concurrent session {session_id}, turn {i}")
                    return
                finished.append(time.perf_counter())
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=drive, args=(s,)) for s in ids]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(1.0, deadline - time.monotonic()))
    elapsed = (max(finished) if finished else time.perf_counter()) - start
    return ConcurrentRun(len(finished), elapsed, hung, errors)


def settle(server: BrainServer, ids: list[str], per_round: int = WARM_UP_TURNS) -> None:
    """Warm-up turns, `per_round` per session at once, repeated until two rounds of them in a
    row start no process: the warm pool has grown to the concurrency, so no fork lands in a
    timed run. (One quiet round is not enough: the registry forks for waiting sessions only in
    a lull or every 0.25 s, so a short round can pass between two forks.)"""
    group = server.proc.pid  # the server leads its own process group
    quiet = 0
    for _ in range(SETTLE_ROUNDS):
        before = set(group_pids(group))
        concurrent_turns(server, ids, per_round, time.monotonic() + 600)
        quiet = quiet + 1 if set(group_pids(group)) <= before else 0
        if quiet == 2:
            return
    print(f"warning: Brain's processes still changed after {SETTLE_ROUNDS} warm-up rounds",
          flush=True)


def alternated_rounds(servers: dict[str, BrainServer], sids: dict[str, str], rounds: int,
                      turns: int) -> tuple[dict[str, list[float]], list[dict[str, float]]]:
    """`turns` sequential turns on each server's session, round after round, each round
    starting from the next arm, so a swing of the machine's speed reaches every arm alike.
    Returns every turn's seconds by arm, and each round's median turn by arm (compare arms by
    the median of per-round ratios: only minutes apart)."""
    samples: dict[str, list[float]] = {arm: [] for arm in servers}
    medians: list[dict[str, float]] = []
    names = list(servers)
    for round_ in range(rounds):
        order = names[round_ % len(names):] + names[:round_ % len(names)]
        this_round: dict[str, float] = {}
        for arm in order:
            took = []
            for i in range(turns):
                start = time.perf_counter()
                if send(servers[arm], sids[arm], f"turn {i}") is None:
                    raise RuntimeError(f"{arm}: a hung turn")
                took.append(time.perf_counter() - start)
            samples[arm].extend(took)
            this_round[arm] = statistics.median(took)
        medians.append(this_round)
    return samples, medians


def run(arm: str, turns: int, sessions: int, per_session: int, resident: bool,
        record: bool = False) -> None:
    policy = "resident (idle_ttl_ms 0)" if resident else "default (released after each turn)"
    print(f"arm {arm}, {policy} sessions; before: {loadavg()}")
    with tempfile.TemporaryDirectory(prefix="brain-bench-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        env = {}
        create: dict = {}
        if arm == "tools":
            config = Path(tmp) / "brain.toml"
            config.write_text(TOOL_CONFIG)
            env["BRAIN_CONFIG"] = str(config)
            create = {"model": "tooluser", "tools": ["echo"]}
        if resident:
            create["idle_ttl_ms"] = 0
        fsync_rate = raw_fdatasync_rate(data)
        server = BrainServer(data, env=env).start()
        try:
            sid = server.create_session(**create)["id"]
            server.send(sid, "warm-up")
            deadline = time.monotonic() + DEADLINE_SECS
            latencies, hung = sequential_turns(server, sid, turns, deadline)
            seq_batches = batches(server, [sid])[1:]  # without the warm-up turn
            ids = [server.create_session(**create)["id"] for _ in range(sessions)]
            conc = concurrent_turns(server, ids, per_session, deadline)
            hung += conc.hung
            errors, elapsed = conc.errors, conc.elapsed
            conc_batches = batches(server, ids)
            tool_calls = count_tool_calls(server, ids) if arm == "tools" else 0
        finally:
            server.kill()
    if errors:
        raise SystemExit(f"benchmark failed: {errors[0]!r}")
    total = conc.turns
    if hung:
        print(f"HUNG TURNS (no reply in {SEND_TIMEOUT_SECS:.0f} s; their sessions stopped): "
              f"{len(hung)}: {hung}")
    turn_rate = total / elapsed
    per_turn = statistics.fmean(conc_batches)
    ceiling = fsync_rate / per_turn
    print(f"raw fdatasync ceiling:       {fsync_rate:,.0f} appends/s (same data dir)")
    print(f"sequential sync {arm} turns: {summary_ms(latencies)} over {len(latencies)} turns")
    print(f"sequential turns/s:          {len(latencies) / sum(latencies):,.1f}")
    print(f"concurrent: {sessions} sessions x {per_session} turns: {turn_rate:,.1f} turns/s "
          f"({total} turns completed in {elapsed:.2f} s)")
    if arm == "tools":
        print(f"tool calls/s (concurrent):   {tool_calls / elapsed:,.1f} "
              f"({tool_calls} ok tool_call_ended; "
              f"{total * TOOL_CALLS_PER_TURN} in completed turns)")
    print(f"fsyncs (batches) per turn:   sequential {statistics.fmean(seq_batches):.2f} "
          f"(min {min(seq_batches)}, max {max(seq_batches)}, {len(seq_batches)} turns); "
          f"concurrent {per_turn:.2f} (min {min(conc_batches)}, max {max(conc_batches)}, "
          f"{len(conc_batches)} turns)")
    print(f"fdatasyncs/s (concurrent):   {turn_rate * per_turn:,.0f} "
          f"= {turn_rate * per_turn / fsync_rate:.3f} of the raw rate")
    print(f"turn rate / fsync ceiling ({ceiling:,.0f} turns/s): {turn_rate / ceiling:.3f}")
    print(f"after: {loadavg()}")
    recorded("turns", {
        "arm": arm, "resident": resident, "sessions": sessions, "per_session": per_session,
        "seq_p50_ms": percentile(latencies, 0.5) * 1000,
        "seq_p99_ms": percentile(latencies, 0.99) * 1000,
        "concurrent_turns_per_s": turn_rate,
        "tool_calls_per_s": tool_calls / elapsed if arm == "tools" else None,
        "commits_per_turn": per_turn, "fsync_ceiling": turn_rate / ceiling,
        "hung_turns": len(hung)}, record)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arm", choices=("text", "tools"), default="text")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--per-session", type=int, default=20)
    parser.add_argument("--resident", action="store_true",
                        help="create sessions with idle_ttl_ms 0 (the actor stays between turns)")
    add_record_flag(parser, "turns")
    args = parser.parse_args()
    run(args.arm, args.turns, args.sessions, args.per_session, args.resident, args.record)


if __name__ == "__main__":
    main()
