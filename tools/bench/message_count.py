"""Actor messages per turn, by who receives them and what they are, read from a BRAIN_TRACE file.

The CPU of a turn is mostly per message (docs/benchmarks.md, "CPU budget of a turn"), so which
messages a turn sends says where the next saving is. `cpu_split --messages` runs its workload
with BRAIN_TRACE set and hands the lines its timed turns wrote (`since`) to `report`. Tracing
costs CPU of its own, so that run prints counts, never CPU.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from brain.tracing.model import load

WAKEUP = "WakeupMessage"


def since(path: Path, t_us: int) -> list[dict]:
    """The trace's lines stamped at or after `t_us` (this machine's monotonic clock in µs, which
    every process stamps its lines with), read as `brain trace` reads them."""
    return [line for line in load(path) if line["t_us"] >= t_us]


def count(lines: list[dict]) -> tuple[Counter, Counter, int]:
    """(messages received by (receiver kind, message), timers fired by (kind, timer), commits).
    A command a registry forwards is named with the command it carries."""
    received: Counter = Counter()
    timers: Counter = Counter()
    commits = 0
    for line in lines:
        direction, kind, msg = line.get("dir"), line.get("kind"), str(line.get("msg"))
        if direction == "commit":
            commits += 1
        elif direction == "recv" and msg.startswith(WAKEUP):
            timers[(kind, msg[len(WAKEUP):].strip("()") or "?")] += 1
        elif direction == "recv":
            command = line.get("command")
            received[(kind, f"{msg}({command})" if command else msg)] += 1
    return received, timers, commits


def report(lines: list[dict], turns: int) -> list[str]:
    """Printable lines: each message kind per turn, largest first, then the totals."""
    received, timers, commits = count(lines)
    out = [f"  actor messages per turn (received; {turns} turns):"]
    for (kind, msg), n in received.most_common():
        out.append(f"    {n / turns:6.2f}  {kind:<16} {msg}")
    out.append(f"    {sum(received.values()) / turns:6.2f}  all messages")
    out.append("  timers fired per turn:")
    for (kind, timer), n in timers.most_common():
        out.append(f"    {n / turns:6.2f}  {kind:<16} {timer}")
    out.append(f"    {sum(timers.values()) / turns:6.2f}  all timers")
    out.append(f"  journal commits per turn: {commits / turns:.2f}")
    return out
