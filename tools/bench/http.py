"""HTTP-side latencies of a real `brain serve`: async-submit admission and SSE fan-out.

Usage: python -m tools.bench.http [--submits 300] [--released-submits 100] [--sessions 30]
                                  [--followers 100]
                                  [--sse-turns 40] [--gap-ms 150] [--part admission|sse|both]

(a) Admission: time from sending `POST /v1/sessions/{id}/messages` with `Prefer: respond-async`
to its 202, over keep-alive connections, spread round-robin over `--sessions` resident sessions
(`idle_ttl_ms: 0`; `--submits` of them) and `--sessions` default ones (released after each
turn; `--released-submits`); before a session
gets its next submit the benchmark waits (polling GET /v1/sessions/{id}) until it is idle again.
Baselines measured in the same run: one write+fdatasync of a 200-byte record in the same data
dir; a plain `GET /healthz`; and `GET /readyz` (one actor-system ping from the web worker), over
the same kind of connection.

(b) SSE: `--followers` raw-socket SSE clients (one selector loop in a separate process, so the
client does not share the driver's GIL) follow one session; the driver sends `--sse-turns` sync
turns, `--gap-ms` apart. For every follower and turn: receipt of `turn_ended` minus the Event's
`at` (ms resolution, same clock) and minus the moment the sync send's HTTP response arrived.
Baseline: the same with 1 follower.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import selectors
import socket
import time
from datetime import datetime

import requests

from tests.support.server import BrainServer
from tools.bench.common import (
    bench_server,
    loadavg,
    one_fdatasync_latencies,
    percentile,
    summary_ms,
)

DEADLINE_SECS = 240.0
MARK = b"event: turn_ended\ndata: "


def pct(samples: list[float]) -> str:
    return summary_ms(samples) if samples else "no samples"


# --- (a) admission -------------------------------------------------------------------------


def wait_idle(http: requests.Session, server: BrainServer, sid: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        body = http.get(f"{server.url}/v1/sessions/{sid}", timeout=30).json()
        if body.get("status") != "running":
            return
        time.sleep(0.005)
    raise TimeoutError("turn did not finish in time")


def admission(server: BrainServer, submits: int, released_submits: int, sessions: int) -> None:
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {server.token}"
    fsync = one_fdatasync_latencies(server.data_dir)
    plain, ready = [], []
    for _ in range(300):
        start = time.perf_counter()
        assert http.get(f"{server.url}/healthz", timeout=30).status_code == 200
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        assert http.get(f"{server.url}/readyz", timeout=30).status_code == 200
        ready.append(time.perf_counter() - start)
    deadline = time.monotonic() + DEADLINE_SECS
    for label, body, count in (("resident", {"idle_ttl_ms": 0}, submits),
                               ("default (released)", {}, released_submits)):
        ids = [server.create_session(**body)["id"] for _ in range(sessions)]
        for sid in ids:
            server.send(sid, "warm-up")
        samples = []
        for i in range(count):
            if time.monotonic() > deadline:
                break
            sid = ids[i % len(ids)]
            wait_idle(http, server, sid, deadline)
            start = time.perf_counter()
            resp = http.post(f"{server.url}/v1/sessions/{sid}/messages",
                             json={"input": f"submit {i}"},
                             headers={"Prefer": "respond-async"}, timeout=30)
            samples.append(time.perf_counter() - start)
            assert resp.status_code == 202, resp.text
        for sid in ids:
            wait_idle(http, server, sid, deadline)
        print(f"async submit -> 202, {label} sessions: {pct(samples)} over {len(samples)} "
              f"submits on {sessions} sessions")
        p50, p99 = percentile(samples, .5), percentile(samples, .99)
        print(f"  ratio to one fdatasync: p50 {p50 / percentile(fsync, .5):.1f}x"
              f", p99 {p99 / percentile(fsync, .99):.1f}x; p50 to GET /healthz: "
              f"{percentile(samples, .5) / percentile(plain, .5):.1f}x, to GET /readyz: "
              f"{percentile(samples, .5) / percentile(ready, .5):.1f}x")
    print(f"baseline one write+fdatasync (same data dir): {pct(fsync)} over {len(fsync)}")
    print(f"baseline GET /healthz (keep-alive, no actor): {pct(plain)} over {len(plain)}")
    print(f"baseline GET /readyz (one actor-system ping): {pct(ready)} over {len(ready)}")


# --- (b) SSE fan-out -----------------------------------------------------------------------


def open_follower(port: int, path: str, token: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  f"Accept: text/event-stream\r\nAuthorization: Bearer {token}\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(4096)
        if not data:
            raise ConnectionError("closed before headers")
        head += data
    status = int(head.split(b" ", 2)[1])
    if status != 200:
        raise ConnectionError(f"SSE status {status}")
    sock.setblocking(False)
    return sock, head.split(b"\r\n\r\n", 1)[1]  # type: ignore[return-value]


def follower_loop(port: int, path: str, token: str, count: int, turns: int, ready, results,
                  stop_at: float) -> None:
    """Child process: `count` followers; sends back [(follower, recv_time, at_ms)]."""
    sel = selectors.DefaultSelector()
    buffers = {}
    for n in range(count):
        sock, rest = open_follower(port, path, token)
        buffers[n] = bytearray(rest)
        sel.register(sock, selectors.EVENT_READ, n)
    ready.set()
    seen = [0] * count
    out = []
    done = 0
    while done < count and time.time() < stop_at:
        for key, _ in sel.select(timeout=1.0):
            n = key.data
            try:
                data = key.fileobj.recv(65536)
            except BlockingIOError:
                continue
            now = time.time()
            if not data:
                sel.unregister(key.fileobj)
                done += 1
                continue
            buf = buffers[n]
            buf += data
            while True:
                idx = buf.find(MARK)
                if idx < 0:
                    del buf[:max(0, len(buf) - len(MARK))]
                    break
                end = buf.find(b"\n\n", idx)
                if end < 0:
                    del buf[:idx]
                    break
                event = json.loads(bytes(buf[idx + len(MARK):end]))
                at = datetime.fromisoformat(event["at"].replace("Z", "+00:00")).timestamp()
                out.append((n, now, at, event["sequence"]))
                del buf[:end]
                seen[n] += 1
                if seen[n] == turns:
                    sel.unregister(key.fileobj)
                    done += 1
                    break
    results.send(out)


def sse(server: BrainServer, followers: int, turns: int, gap_ms: int) -> list[float]:
    sid = server.create_session(idle_ttl_ms=0)["id"]
    server.send(sid, "warm-up")
    after = server.events(sid)[-1]["sequence"]
    path = f"/v1/sessions/{sid}/events?after={after}"
    ctx = mp.get_context("fork")
    ready = ctx.Event()
    parent, child = ctx.Pipe(duplex=False)
    stop_at = time.time() + DEADLINE_SECS
    proc = ctx.Process(target=follower_loop,
                       args=(server.port, path, server.token, followers, turns, ready, child,
                             stop_at))
    proc.start()
    if not ready.wait(60):
        proc.kill()
        raise TimeoutError("followers did not connect")
    time.sleep(0.2)
    responses = []
    for i in range(turns):
        server.send(sid, f"turn {i}")
        responses.append(time.time())
        time.sleep(gap_ms / 1000)
    if not parent.poll(60):
        proc.kill()
        raise TimeoutError("followers did not finish")
    out = parent.recv()
    proc.join(10)
    ended = sorted({seq for _, _, _, seq in out})
    # the k-th distinct turn_ended is the k-th turn's while some follower saw every turn
    # (the delivery count is printed)
    response_by_seq = dict(zip(ended, responses[:len(ended)], strict=True))
    from_at = [recv - at for _, recv, at, _ in out]
    from_resp = [recv - response_by_seq[seq] for _, recv, _, seq in out if seq in response_by_seq]
    last = {}
    for _, recv, at, seq in out:
        last[seq] = max(last.get(seq, 0.0), recv - at)
    print(f"SSE {followers} follower(s), {turns} turns: {len(out)} turn_ended deliveries "
          f"(expected {followers * turns})")
    print(f"  receipt - event at (commit, ms clock): {pct(from_at)}")
    print(f"  receipt - sync send response:          {pct(from_resp)}")
    print(f"  slowest follower per turn (from at):   {pct(list(last.values()))}")
    return from_at


def run(part: str, submits: int, released_submits: int, sessions: int, followers: int,
        sse_turns: int,
        gap_ms: int) -> None:
    print(f"before: {loadavg()}")
    with bench_server() as server:
        if part in ("admission", "both"):
            admission(server, submits, released_submits, sessions)
            print(f"after admission: {loadavg()}")
        if part in ("sse", "both"):
            base = sse(server, 1, sse_turns, gap_ms)
            many = sse(server, followers, sse_turns, gap_ms)
            print(f"  ratio {followers} followers / 1 follower (receipt - at): p50 "
                  f"{percentile(many, .5) / max(percentile(base, .5), 1e-4):.1f}x, p99 "
                  f"{percentile(many, .99) / max(percentile(base, .99), 1e-4):.1f}x")
    print(f"after: {loadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=("admission", "sse", "both"), default="both")
    parser.add_argument("--submits", type=int, default=300)
    parser.add_argument("--released-submits", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--followers", type=int, default=100)
    parser.add_argument("--sse-turns", type=int, default=40)
    parser.add_argument("--gap-ms", type=int, default=150)
    args = parser.parse_args()
    run(args.part, args.submits, args.released_submits, args.sessions, args.followers,
        args.sse_turns, args.gap_ms)


if __name__ == "__main__":
    main()
