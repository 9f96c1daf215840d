"""A burst of async submits against a real `brain serve`: time to the 202, then every turn ends.

Usage: python -m tools.bench.burst [--sessions 600] [--delay-ms 5000] [--record]
                                   [--baseline SRC --rounds 2]

`--baseline SRC` names the source tree of another Brain (e.g. `git archive REV brain | tar -x
-C SRC`): its server and this one's then alternate, `--rounds` times each, on fresh data dirs.

`--sessions` sessions (default release policy) are created first, with a scripted model that
answers after `--delay-ms`. Then one `POST /v1/sessions/{id}/messages` with
`Prefer: respond-async` per session is fired all at once from one selector loop over raw
non-blocking sockets (a connection each, `Connection: close`): every connect is started before
any answer is read, and each request's time runs from the start of its connect to the end of
its response, so a full accept queue or a slow admission counts. Then the benchmark waits until
no session says `running`, and counts from the journals (JournalScan) the sessions whose last
turn ended with `turn_ended`.

A 429 or 503 counts as a refusal, well-formed when it has `Retry-After` and the error shape
`{"error": {"code", "message", "request_id"}}`; the refused sessions submit again, all at once,
after the largest Retry-After, until every session has its 202 (so all turns still run). Every
answer counts in the latency figures, the retries' too. Any other status, a malformed refusal, a
closed connection or no answer within RESPONSE_TIMEOUT_SECS is an error.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import selectors
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import requests

from brain.protocol.records import TURN_ENDED, TURN_FAILED, TURN_STARTED
from tests.support.server import BrainServer
from tools.bench.common import bench_server, loadavg, percentile
from tools.bench.ledger import add_record_flag, recorded
from tools.bench.workload import ANSWER, BURST_MODEL_DELAY_MS, SLOW_MODEL, brain_config

RESPONSE_TIMEOUT_SECS = 120.0
END_TIMEOUT_SECS = 600.0
CREATE_THREADS = 4


@dataclass
class Answer:
    """One submit's outcome: `status` 0 when no HTTP response came (see `error`)."""

    status: int = 0
    seconds: float = float("nan")
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str = ""

    def well_formed_refusal(self) -> bool:
        if self.status not in (429, 503) or "retry-after" not in self.headers:
            return False
        try:
            err = json.loads(self.body)["error"]
        except (ValueError, KeyError, TypeError):
            return False
        return isinstance(err, dict) and {"code", "message", "request_id"} <= set(err)


@dataclass
class BurstResult:
    sessions: int
    create_secs: float
    answers: list[Answer]  # every answer, retries after a refusal included
    rounds: int  # the first burst plus the retry rounds of refused sessions
    ended: int  # sessions whose last turn ended with turn_ended
    end_secs: float  # from the first connect until no session was running

    def accepted(self) -> list[Answer]:
        return [a for a in self.answers if a.status == 202]

    def refused(self) -> list[Answer]:
        return [a for a in self.answers if a.well_formed_refusal()]

    def errors(self) -> list[Answer]:
        return [a for a in self.answers if a.status != 202 and not a.well_formed_refusal()]

    def admission_seconds(self) -> list[float]:
        """Seconds to every HTTP answer (202 or refusal)."""
        return [a.seconds for a in self.answers if a.status]


def request_bytes(port: int, token: str, sid: str, text: str) -> bytes:
    body = json.dumps({"input": text}).encode()
    head = (f"POST /v1/sessions/{sid}/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Prefer: respond-async\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


def parse_response(raw: bytes) -> tuple[int, dict[str, str], bytes] | None:
    """(status, headers, body) once `raw` holds a whole response, else None."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "-1"))
    if length >= 0 and len(body) < length:
        return None
    return status, headers, body[:length] if length >= 0 else body


def fire(port: int, token: str, sids: list[str],
         make_request: Callable[[int, str, str, str], bytes] | None = None
         ) -> tuple[list[Answer], float]:
    """One async submit per session, all at once; the answers and the moment of the first
    connect (perf_counter). `make_request(port, token, sid, text)` makes another request of
    each instead (the fleet's HTTP floor fires `GET /healthz` this way)."""
    make_request = make_request or request_bytes
    sel = selectors.DefaultSelector()
    answers = [Answer() for _ in sids]
    started: list[float] = []
    pending: dict[int, tuple[bytes, bytearray]] = {}
    for n, sid in enumerate(sids):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        started.append(time.perf_counter())
        connected = sock.connect_ex(("127.0.0.1", port))
        if connected not in (0, errno.EINPROGRESS):
            answers[n].error = f"connect: {os.strerror(connected)}"
            sock.close()
            continue
        sel.register(sock, selectors.EVENT_WRITE, n)
        pending[n] = (make_request(port, token, sid, f"burst {n}"), bytearray())
    first = started[0]
    deadline = time.monotonic() + RESPONSE_TIMEOUT_SECS

    def finish(sock: socket.socket, n: int) -> None:
        sel.unregister(sock)
        sock.close()
        del pending[n]

    while pending and time.monotonic() < deadline:
        for key, events in sel.select(timeout=1.0):
            sock, n = key.fileobj, key.data
            request, buf = pending[n]
            try:
                if events & selectors.EVENT_WRITE:
                    sent = sock.send(request)
                    if sent < len(request):
                        pending[n] = (request[sent:], buf)
                    else:
                        pending[n] = (b"", buf)  # all sent: now the answer
                        sel.modify(sock, selectors.EVENT_READ, n)
                    continue
                data = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as exc:
                answers[n].error = f"socket: {exc}"
                finish(sock, n)
                continue
            buf += data
            parsed = parse_response(bytes(buf))
            if parsed is None and data:
                continue
            if parsed is None:
                answers[n].error = "connection closed before a whole response"
            else:
                status, headers, body = parsed
                answers[n] = Answer(status, time.perf_counter() - started[n], headers, body)
            finish(sock, n)
    for n in list(pending):
        request, buf = pending[n]  # what was still to send, and what came back
        whole = len(make_request(port, token, sids[n], f"burst {n}"))
        stage = ("never writable: the connect did not complete" if len(request) == whole
                 else "request partly sent" if request else "request sent")
        answers[n].error = (f"no response within {RESPONSE_TIMEOUT_SECS:.0f} s "
                            f"({stage}; {len(buf)} bytes back)")
        for key in list(sel.get_map().values()):
            if key.data == n:
                finish(key.fileobj, n)  # type: ignore[arg-type]
                break
    sel.close()
    return answers, first


def wait_not_running(server: BrainServer, sids: list[str], deadline: float) -> None:
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {server.token}"
    left = list(sids)
    while left and time.monotonic() < deadline:
        still = []
        for sid in left:
            if time.monotonic() > deadline:
                return
            body = http.get(f"{server.url}/v1/sessions/{sid}", timeout=30).json()
            if body.get("status") == "running":
                still.append(sid)
        left = still
        if left:
            time.sleep(0.2)


def last_turn_ended(journal: Path) -> bool:
    from brain.journal import JournalScan

    last = None
    for frame in JournalScan(journal):
        if frame.record["kind"] in (TURN_STARTED, TURN_ENDED, TURN_FAILED):
            last = frame.record["kind"]
    return last == TURN_ENDED


def create_sessions(server: BrainServer, count: int, **create: object) -> list[str]:
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        return list(pool.map(lambda _: server.create_session(**create)["id"], range(count)))


def burst(server: BrainServer, sessions: int, model: str = SLOW_MODEL) -> BurstResult:
    start = time.perf_counter()
    sids = create_sessions(server, sessions, model=model)
    create_secs = time.perf_counter() - start
    answers, first = fire(server.port, server.token, sids)
    every = list(answers)
    accepted = [sid for sid, a in zip(sids, answers, strict=True) if a.status == 202]
    refused = [(sid, a) for sid, a in zip(sids, answers, strict=True)
               if a.well_formed_refusal()]
    rounds = 1
    retry_deadline = time.monotonic() + END_TIMEOUT_SECS
    while refused and time.monotonic() < retry_deadline:
        time.sleep(max(float(a.headers["retry-after"]) for _, a in refused))
        again, _ = fire(server.port, server.token, [sid for sid, _ in refused])
        rounds += 1
        every.extend(again)
        accepted += [sid for (sid, _), a in zip(refused, again, strict=True) if a.status == 202]
        refused = [(sid, a) for (sid, _), a in zip(refused, again, strict=True)
                   if a.well_formed_refusal()]
    wait_not_running(server, accepted, time.monotonic() + END_TIMEOUT_SECS)
    end_secs = time.perf_counter() - first
    root = server.data_dir / "sessions"
    ended = sum(1 for sid in sids if last_turn_ended(root / sid / "journal"))
    return BurstResult(sessions, create_secs, every, rounds, ended, end_secs)


def describe(result: BurstResult) -> list[str]:
    times = result.admission_seconds()
    statuses: dict[int, int] = {}
    for a in result.answers:
        statuses[a.status] = statuses.get(a.status, 0) + 1
    errors = result.errors()
    lines = [
        f"{result.sessions} sessions created in {result.create_secs:.1f} s; "
        f"statuses {dict(sorted(statuses.items()))} (0 = no HTTP response) over "
        f"{result.rounds} round(s) (refused sessions retry after Retry-After)",
        f"time to the answer: p50 {percentile(times, 0.5) * 1000:,.0f} ms, "
        f"p99 {percentile(times, 0.99) * 1000:,.0f} ms, "
        f"max {max(times, default=float('nan')) * 1000:,.0f} ms over {len(times)} answers",
        f"202 {len(result.accepted())}, well-formed 429/503 {len(result.refused())}, "
        f"errors {len(errors)}; turns ended {result.ended} of {result.sessions} "
        f"({result.end_secs:.1f} s from the first connect until none was running)",
    ]
    if errors:
        first = errors[0]
        lines.append(f"first error: status {first.status} {first.error or first.body[:200]!r}")
    return lines


def baseline_server(source: Path, config: str) -> BrainServer:
    """A server of the Brain whose source tree is `source` (run from it: `python -m` puts the
    working directory first on the path, and every process it starts inherits it)."""
    tmp = Path(tempfile.mkdtemp(prefix="brain-bench-"))
    (tmp / "data").mkdir()
    (tmp / "brain.toml").write_text(config)
    return BrainServer(tmp / "data", env={"BRAIN_CONFIG": str(tmp / "brain.toml"),
                                          "PYTHONPATH": str(source)}, cwd=source)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=600)
    parser.add_argument("--delay-ms", type=int, default=BURST_MODEL_DELAY_MS)
    parser.add_argument("--baseline", type=Path, help="source tree of the Brain to compare")
    parser.add_argument("--rounds", type=int, default=1)
    add_record_flag(parser, "burst")
    args = parser.parse_args()
    print(f"before: {loadavg()}; scripted answer of {len(ANSWER)} bytes after "
          f"{args.delay_ms} ms")
    config = brain_config(slow_delay_ms=args.delay_ms)
    for n in range(args.rounds):
        if args.baseline is not None:
            server = baseline_server(args.baseline.resolve(), config).start()
            try:
                result = burst(server, args.sessions)
            finally:
                server.kill()
                shutil.rmtree(server.data_dir.parent, ignore_errors=True)
            print(f"round {n + 1}, baseline ({args.baseline}):")
            for line in describe(result):
                print(f"  {line}")
        with bench_server(config=config) as server:
            result = burst(server, args.sessions)
        print(f"round {n + 1}, this tree:")
        for line in describe(result):
            print(f"  {line}")
        print(f"  {loadavg()}", flush=True)
        times = result.admission_seconds()
        recorded("burst", {"sessions": args.sessions, "delay_ms": args.delay_ms,
                           "slowest_ms": max(times, default=float("nan")) * 1000,
                           "p50_ms": percentile(times, 0.5) * 1000,
                           "errors": len(result.errors()), "refused": len(result.refused()),
                           "ended": result.ended}, args.record)
    print(f"after: {loadavg()}")


if __name__ == "__main__":
    main()
