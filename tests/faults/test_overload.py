"""Overload (issue "Faults", overload): many sessions driven at once and many idle SSE
followers held open. Brain sheds what it cannot take promptly with 503 `overloaded` and
Retry-After in the contract's error shape instead of timing out; every turn it accepted ends;
turns keep ending throughout; the idle followers stay connected; the memory of the server's
processes stays bounded (its peak is printed).

Turns that wait on a model hold no session actor (they are suspended), so waiting alone never
overloads Brain: here each turn's Agentloop computes (tens of milliseconds of CPU), and more
such turns arrive at once than the session actors and the CPUs get through.

The CI-sized run drives 150 sessions with 300 idle followers; the full size (1,000 sessions,
2,000 followers) runs under `-m torture`.
"""

from __future__ import annotations

import random
import select
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from brain.journal import JournalScan
from tests.agentloop.helpers import compile_guest
from tests.support.server import BrainServer, configured, group_pids
from tests.support.sse import SseClient

SLOW = "slow"
COMPUTE = "compute"
COMPUTE_ITERATIONS = 60_000_000  # about 20 ms of one CPU per turn
ANSWER_TIMEOUT_SECS = 30.0  # any HTTP answer slower than this fails the run
POLL_SECS = 2.0  # a driver's status poll, jittered as a client should
RUN_TIMEOUT_SECS = 600.0


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    accepted: list[tuple[str, int]] = field(default_factory=list)  # (session, sequence)
    shed: int = 0
    malformed: list[str] = field(default_factory=list)
    slowest: float = 0.0

    def answer(self, secs: float) -> None:
        with self.lock:
            self.slowest = max(self.slowest, secs)


def pss_bytes(pids: list[int]) -> int:
    """Proportional set size over `pids`: shared pages counted once in total."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
        except OSError:
            continue
    return total


class PeakMemory:
    def __init__(self, server: BrainServer) -> None:
        self.server = server
        self.peak = 0
        self.processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            pids = group_pids(self.server.proc.pid)
            self.peak = max(self.peak, pss_bytes(pids))
            self.processes = max(self.processes, len(pids))

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def drive(server: BrainServer, session_id: str, turns: int, tally: Tally,
          deadline: float) -> None:
    """Submit `turns` turns one after another, each retried after Retry-After while shed."""
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {server.token}"
    # A connection per request: a kept-alive one that the server closes after its keep-alive
    # timeout while this client sleeps would fail the next POST for the client's reason.
    http.headers["Connection"] = "close"
    url = f"{server.url}/v1/sessions/{session_id}"
    for n in range(turns):
        while time.monotonic() < deadline:
            began = time.monotonic()
            resp = http.post(f"{url}/messages", json={"input": f"turn {n}"},
                             headers={"Prefer": "respond-async"}, timeout=ANSWER_TIMEOUT_SECS)
            tally.answer(time.monotonic() - began)
            if resp.status_code == 202:
                with tally.lock:
                    tally.accepted.append((session_id, resp.json()["sequence"]))
                break
            error = resp.json().get("error", {}) if resp.content else {}
            if resp.status_code != 503 or error.get("code") != "overloaded" \
                    or not {"code", "message", "request_id"} <= set(error) \
                    or "Retry-After" not in resp.headers:
                with tally.lock:
                    tally.malformed.append(f"{resp.status_code} {resp.text[:200]}")
                return
            with tally.lock:
                tally.shed += 1
            time.sleep(float(resp.headers["Retry-After"]) + random.random())
        while time.monotonic() < deadline:  # the accepted turn, to its end
            began = time.monotonic()
            status = http.get(url, timeout=ANSWER_TIMEOUT_SECS).json()["status"]
            tally.answer(time.monotonic() - began)
            if status != "running":
                break
            time.sleep(POLL_SECS * (0.5 + random.random()))


def turn_ends(server: BrainServer, accepted: list[tuple[str, int]]) -> list[int | None]:
    """For each accepted turn, the `at` of its turn_ended (None when it did not end so)."""
    out: list[int | None] = []
    for session_id, sequence in accepted:
        journal = server.data_dir / "sessions" / session_id / "journal"
        end = None
        for frame in JournalScan(journal):
            record = frame.record
            if record["kind"] == "turn_ended" and record.get("started") == sequence:
                end = record["at"]
        out.append(end)
    return out


def still_open(client: SseClient) -> bool:
    """A follower whose connection the server has not closed (it may have sent keep-alives)."""
    poller = select.poll()  # select() takes no descriptor above 1023
    poller.register(client.sock, select.POLLIN)
    if not poller.poll(0):
        return True
    try:
        return client.sock.recv(65536) != b""
    except OSError:
        return False


def overload(tmp_path: Path, sessions: int, followers: int, turns: int, env: dict[str, str],
             report: Callable[[str], None]) -> None:
    compute = compile_guest(COMPUTE, tmp_path / "guests", iterations=COMPUTE_ITERATIONS)
    toml = (f'[models.{SLOW}]\nprovider = "scripted"\n'
            f'script = [ {{ text = "done", delay_ms = 1000 }} ]\n'
            f'[agentloops.{COMPUTE}]\npath = "{compute}"\n')
    server = configured(tmp_path, toml, env).start()
    clients: list[SseClient] = []
    try:
        with ThreadPoolExecutor(8) as pool:
            ids = list(pool.map(lambda n: server.create_session(
                model=SLOW, agentloop=COMPUTE if n % 2 else "default")["id"], range(sessions)))
        for n in range(followers):
            client = SseClient("127.0.0.1", server.port,
                               f"/v1/sessions/{ids[n % len(ids)]}/events", server.token,
                               timeout=ANSWER_TIMEOUT_SECS)
            assert client.status == 200
            clients.append(client)
        tally = Tally()
        deadline = time.monotonic() + RUN_TIMEOUT_SECS
        began = time.monotonic()
        with PeakMemory(server) as memory, ThreadPoolExecutor(sessions) as pool:
            futures = [pool.submit(drive, server, sid, turns, tally, deadline) for sid in ids]
            for future in futures:
                future.result()  # a timeout or a refused connection fails the test here
        secs = time.monotonic() - began
        ends = turn_ends(server, tally.accepted)
        ended = sorted(at for at in ends if at is not None)
        gaps = [b - a for a, b in zip(ended, ended[1:], strict=False)]
        open_followers = sum(still_open(c) for c in clients)
        report(f"overload: {sessions} sessions x {turns} turns, {followers} idle SSE "
               f"followers: {len(tally.accepted)} accepted, {tally.shed} shed (503 + "
               f"Retry-After), {len(tally.malformed)} malformed; {len(ended)} ended in "
               f"{secs:.1f} s; slowest answer {tally.slowest:.2f} s; longest pause between "
               f"turn ends {max(gaps, default=0) / 1000:.1f} s; followers still open "
               f"{open_followers}; peak memory of the server's processes "
               f"{memory.peak / 2**20:.0f} MiB PSS over at most {memory.processes} processes")
        assert not tally.malformed, tally.malformed[:3]
        assert tally.shed > 0, "the load never exceeded capacity: nothing was shed"
        assert len(tally.accepted) == sessions * turns, "a session did not get its turns in"
        assert len(ended) == len(tally.accepted), "an accepted turn did not end"
        assert tally.slowest < ANSWER_TIMEOUT_SECS
        assert max(gaps, default=0) < 10_000, "turns stopped flowing"
        assert open_followers == followers
        assert memory.peak < 2 * 2**30, "memory not bounded"
    finally:
        for client in clients:
            client.sock.close()
        server.kill()


@pytest.mark.slow_e2e  # a load run: shedding and the journals, the same on any Python
def test_overload_sheds_and_loses_nothing(tmp_path):
    overload(tmp_path, sessions=150, followers=300, turns=2,
             env={"BRAIN_MAX_SESSION_ACTORS": "16", "BRAIN_ADMISSION_BACKLOG": "40"},
             report=print)


@pytest.mark.torture
def test_overload_full_size(tmp_path, request):
    # Here, not in a conftest of tests/faults: the skip is this test's own business.
    if "torture" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("long torture run: select it with -m torture")
    overload(tmp_path, sessions=1000, followers=2000, turns=2,
             env={"BRAIN_ADMISSION_BACKLOG": "200"}, report=print)
