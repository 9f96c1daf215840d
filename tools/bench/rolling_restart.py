"""A rolling restart of a three-member Brain under a steady load of sync turns.

Three members of one convention on 127.0.0.2-4 (docs/several-hosts.md), sessions spread over
all three. Client threads send synchronous turns without pause, each through the front end of
a member other than the one that holds its session and other than the one being restarted (as
a load balancer that takes a stopping member out would). Meanwhile each member in turn is
stopped gracefully (SIGTERM: it drains, then exits), started again, and left alone for
`--hold` seconds before the next, so a member dropped again after it joined would show.

Printed per member: how long it was out (from SIGTERM until a session it holds answered 200
through another front end, and until a new session was placed on it again), and, for the whole
run, turns ended, refused (`503 unavailable`: the member holding the session was down), failed
(any other answer, or a turn that did not end) and the longest answer.
Usage: `python -m tools.bench.rolling_restart [--clients 4] [--hold 45]`.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import tempfile
import threading
import time
from pathlib import Path

import requests

from tests.support.convention import MemberServer, knows
from tests.support.waiting import wait_for

HOSTS = {"a": "127.0.0.2", "b": "127.0.0.3", "c": "127.0.0.4"}
SESSIONS_PER_MEMBER = 4


class Load:
    """Client threads sending sync turns; the tallies they keep."""

    def __init__(self, members: dict[str, MemberServer], sessions: list[str],
                 clients: int) -> None:
        self.members = members
        self.sessions = sessions
        self.clients = clients
        self.restarting: str | None = None
        self.counts: collections.Counter[str] = collections.Counter()
        self.failures: list[str] = []
        self.longest = 0.0
        self.stop = threading.Event()
        self._lock = threading.Lock()

    def front_end_for(self, session_id: str, turn: int) -> MemberServer:
        holder = session_id.rsplit("-", 1)[1]
        others = [m for name, m in sorted(self.members.items())
                  if name not in (holder, self.restarting)]
        return others[turn % len(others)] if others else self.members[holder]

    def client(self, index: int) -> None:
        mine = self.sessions[index::self.clients]  # one turn at a time per session
        for turn in itertools.count(index):
            if self.stop.is_set():
                return
            sid = mine[turn % len(mine)]
            front = self.front_end_for(sid, turn)
            start = time.monotonic()
            try:
                resp = front.request("POST", f"/v1/sessions/{sid}/messages",
                                     json={"input": f"turn {turn}"}, timeout=60)
                outcome = ("ended" if resp.status_code == 200
                           and resp.json().get("status") == "ended" else
                           "refused" if resp.status_code == 503 else "failed")
                detail = f"{resp.status_code} {resp.text[:160]}"
            except requests.RequestException as exc:
                outcome, detail = "failed", repr(exc)[:160]
            elapsed = time.monotonic() - start
            with self._lock:
                self.counts[outcome] += 1
                self.longest = max(self.longest, elapsed)
                if outcome == "failed" and len(self.failures) < 10:
                    self.failures.append(f"{sid} via {front.name}: {detail}")
            if outcome == "refused":
                time.sleep(0.5)  # as a client honouring Retry-After would, sooner


def served_through_others(members: dict[str, MemberServer], name: str, session_id: str) -> bool:
    others = [m for n, m in members.items() if n != name]
    try:
        return all(m.request("GET", f"/v1/sessions/{session_id}", timeout=5).status_code == 200
                   for m in others)
    except requests.RequestException:
        return False


def placed_on(members: dict[str, MemberServer], name: str) -> bool:
    front = next(m for n, m in members.items() if n != name)
    try:
        return any(front.create_session()["id"].endswith(f"-{name}") for _ in range(9))
    except (requests.RequestException, KeyError, ValueError):
        return False


def restart_one(members: dict[str, MemberServer], load: Load, name: str, hold: float) -> None:
    """Stop and start member `name`, time how long it was out, and check it stays in."""
    member = members[name]
    probe = next(s for s in load.sessions if s.endswith(f"-{name}"))
    load.restarting = name
    stopped_at = time.monotonic()
    member.stop()
    member.start()
    wait_for(lambda: served_through_others(members, name, probe), timeout=300, interval=0.2,
             what=f"{name}'s sessions served again")
    served = time.monotonic() - stopped_at
    wait_for(lambda: placed_on(members, name), timeout=300, interval=0.5,
             what=f"new sessions placed on {name} again")
    placed = time.monotonic() - stopped_at
    load.restarting = None
    time.sleep(hold)
    still_served = served_through_others(members, name, probe)
    still_placed = placed_on(members, name)
    print(f"member {name}: out {served:6.1f} s (served again), {placed:6.1f} s "
          f"(placed on again); {hold:.0f} s later served: {still_served}, "
          f"placed on: {still_placed}", flush=True)


def run(clients: int, hold: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        leader = MemberServer(Path(tmp), "a", HOSTS["a"])
        members = {"a": leader,
                   "b": MemberServer(Path(tmp), "b", HOSTS["b"], leader),
                   "c": MemberServer(Path(tmp), "c", HOSTS["c"], leader)}
        try:
            for member in members.values():
                member.start()
            wait_for(lambda: all(knows(s, o) for s in members.values() for o in members
                                 if o != s.name), timeout=60, what="the convention formed")
            sessions: list[str] = []
            while min(sum(s.endswith(f"-{n}") for s in sessions) for n in members) < \
                    SESSIONS_PER_MEMBER:
                sessions.append(leader.create_session()["id"])
            load = Load(members, sessions, clients)
            threads = [threading.Thread(target=load.client, args=(i,), daemon=True)
                       for i in range(clients)]
            for thread in threads:
                thread.start()
            time.sleep(5)
            before = sum(load.counts.values())
            for name in ("c", "b", "a"):
                restart_one(members, load, name, hold)
            load.stop.set()
            for thread in threads:
                thread.join(90)
            total = sum(load.counts.values())
            print(f"turns: {total} ({total - before} during the restarts), "
                  f"ended {load.counts['ended']}, refused {load.counts['refused']}, "
                  f"failed {load.counts['failed']}; longest answer {load.longest:.1f} s")
            for failure in load.failures:
                print("  failed:", failure)
        finally:
            for member in reversed(list(members.values())):
                member.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--hold", type=float, default=45.0,
                        help="seconds each restarted member is left alone before the next")
    args = parser.parse_args()
    run(args.clients, args.hold)


if __name__ == "__main__":
    main()
