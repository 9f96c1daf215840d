"""The Brain arm with one async submit per session: the burst of submits, then gentle polls
until every turn ended, each turn's time read from its journal."""

from __future__ import annotations

import heapq
import http.client
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from brain.protocol.records import TURN_ENDED, TURN_FAILED
from tools.bench.common import percentile
from tools.bench.fleet_brain import brain_server, commits_per_turn, log_problems, ready_fleet
from tools.bench.fleet_drive import error_code
from tools.bench.fleet_floor import fire_measured, http_floor
from tools.bench.fleet_shapes import (
    OK,
    PHASE_SLACK_SECS,
    POLL_INTERVAL_SECS,
    POLL_RATE,
    POLL_TICK_SECS,
    POLL_WORKERS,
    REQUEST_TIMEOUT_SECS,
    ArmResult,
    Workload,
)


def submit_code(answer: Any) -> str:
    if answer.status == 202:
        return OK
    if answer.status == 0:
        return f"submit: {answer.error}"
    return f"submit {error_code(answer.status, answer.body)}"


class Poller:
    """GET /v1/sessions/{id} from POLL_WORKERS threads, one keep-alive connection each."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.requests = 0
        self.errors: Counter[str] = Counter()
        self._local = threading.local()
        self._lock = threading.Lock()

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(
                "127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_SECS)
        return conn

    def ended(self, session_id: str, sequence: int) -> bool:
        """Whether the session's latest turn is the receipt's (or later) and no longer runs."""
        conn = self._conn()
        try:
            conn.request("GET", f"/v1/sessions/{session_id}",
                         headers={"Authorization": f"Bearer {self.token}"})
            resp = conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            self._count(f"poll: {type(exc).__name__}")
            return False
        self._count(None if resp.status == 200 else f"poll {resp.status}")
        if resp.status != 200:
            return False
        turn = json.loads(body).get("turn") or {}
        return turn.get("sequence", 0) >= sequence and turn.get("status") != "running"

    def _count(self, error: str | None) -> None:
        with self._lock:
            self.requests += 1
            if error:
                self.errors[error] += 1


def wait_until_ended(poller: Poller, receipts: dict[str, int], first_poll: float,
                     deadline: float) -> int:
    """Poll each receipt's session from `first_poll` (monotonic), then every
    POLL_INTERVAL_SECS, until its turn no longer runs, at most POLL_RATE GETs a second; the
    sessions never seen ended."""
    due = [(first_poll, sid) for sid in receipts]
    heapq.heapify(due)
    chunk = max(1, int(POLL_RATE * POLL_TICK_SECS))
    with ThreadPoolExecutor(POLL_WORKERS) as pool:
        while due and time.monotonic() < deadline:
            tick = time.monotonic()
            wait = due[0][0] - tick
            if wait > 0:
                time.sleep(min(wait, 1.0))
                continue
            batch = []
            while due and due[0][0] <= tick and len(batch) < chunk:
                batch.append(heapq.heappop(due)[1])
            for sid, done in zip(batch, pool.map(lambda s: poller.ended(s, receipts[s]), batch),
                                 strict=True):
                if not done:
                    heapq.heappush(due, (time.monotonic() + POLL_INTERVAL_SECS, sid))
            time.sleep(max(0.0, tick + len(batch) / POLL_RATE - time.monotonic()))
    return len(due)


def terminal_record(journal: Path, sequence: int) -> tuple[str, int] | None:
    """(kind, at ms) of the record that ended the turn started at `sequence`, if any."""
    from brain.journal import JournalScan

    for frame in JournalScan(journal):
        record = frame.record
        if record["kind"] in (TURN_ENDED, TURN_FAILED) and record["seq"] > sequence:
            return record["kind"], record["at"]
    return None


def submitted_turns(server: Any, receipts: dict[str, int], began_wall: float) -> tuple[
        Counter[str], list[float]]:
    """Each accepted turn's end from its journal: codes, and seconds from the burst's start."""
    codes: Counter[str] = Counter()
    latencies = []
    for sid, sequence in receipts.items():
        found = terminal_record(server.data_dir / "sessions" / sid / "journal", sequence)
        if found is None:
            codes["turn not ended"] += 1
        elif found[0] == TURN_FAILED:
            codes["turn failed"] += 1
        else:
            codes[OK] += 1
            latencies.append(found[1] / 1000 - began_wall)
    return codes, latencies


def brain_submit_arm(w: Workload, env: dict[str, str], log: Callable[[str], None]) -> ArmResult:
    """The Brain arm with one async submit per session (see the module docstring)."""
    with brain_server(env, w.delay_ms) as server:
        fleet_ids, phase = ready_fleet(server, w, log)
        poller = Poller(server.port, server.token)
        with phase:
            began_wall, began = time.time(), time.monotonic()
            answers, submits = fire_measured(server, fleet_ids, 202)
            receipts = {sid: json.loads(a.body)["sequence"]
                        for sid, a in zip(fleet_ids, answers, strict=True) if a.status == 202}
            unseen = wait_until_ended(poller, receipts, began + w.delay_ms / 1000,
                                      began + w.ideal + PHASE_SLACK_SECS)
        floor = http_floor(server, len(fleet_ids))
        codes = Counter(submit_code(a) for a in answers if a.status != 202)
        turn_codes, latencies = submitted_turns(server, receipts, began_wall)
        codes.update(turn_codes)
        wall = max(latencies, default=time.monotonic() - began)
        result = ArmResult("Brain", w.sessions, wall, w.ideal, latencies, codes)
        phase.fill(result)
        result.commits = commits_per_turn(server, list(receipts))
        times = [a.seconds for a in answers if a.status]
        accepted = [a.seconds for a in answers if a.status == 202]
        result.extra.update({
            "submits_202": len(accepted), "answer_p50_secs": percentile(times, 0.5),
            "answer_p99_secs": percentile(times, 0.99),
            "answer_max_secs": max(times, default=float("nan")),
            "polls": poller.requests, "poll_errors": dict(poller.errors),
            "never_seen_ended": unseen, "server_log_problems": log_problems(server),
            "submit_burst": submits.as_dict(), "healthz_floor": floor.as_dict()})
    return result
