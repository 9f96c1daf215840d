"""The fleet itself: N threads released together, each sending its K turns through a `Turner`
(a Brain session over HTTP here, a LangGraph thread_id in tools/bench/fleet_peer.py), every
outcome counted by its code."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tools.bench.fleet_shapes import OK, REQUEST_TIMEOUT_SECS, ArmResult

# --- the fleet: N threads, K turns each -----------------------------------------------------


class Turner(Protocol):
    def turn(self, index: int) -> str:
        """Run turn `index`; its outcome's code (OK or an error code)."""

    def close(self) -> None: ...


@dataclass
class Fleet:
    outcomes: list[tuple[str, float, float]]  # (code, seconds, end perf_counter) per attempt
    wall: float
    stuck: int


def ends_session(code: str) -> bool:
    """A timeout or a broken connection leaves the session's state unknown: stop driving it."""
    return code.startswith(("timeout", "connection"))


def drive(sessions: int, turns: int, make: Callable[[int], Turner], deadline: float) -> Fleet:
    """`sessions` threads released at once, each running `turns` turns one after another.

    The wall time runs from the release to the last answer. No turn starts after `deadline`
    (monotonic); a thread still blocked REQUEST_TIMEOUT_SECS after it is left behind."""
    go = threading.Event()
    results: list[list[tuple[str, float, float]]] = [[] for _ in range(sessions)]

    def run(n: int) -> None:
        turner = make(n)
        go.wait()
        try:
            for i in range(turns):
                if time.monotonic() > deadline:
                    return
                start = time.perf_counter()
                code = turner.turn(i)
                end = time.perf_counter()
                results[n].append((code, end - start, end))
                if ends_session(code):
                    return
        finally:
            turner.close()

    threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in range(sessions)]
    for t in threads:
        t.start()
    start = time.perf_counter()
    go.set()
    for t in threads:
        t.join(timeout=max(0.0, deadline + REQUEST_TIMEOUT_SECS + 5 - time.monotonic()))
    outcomes = [o for per in results for o in list(per)]
    last = max((end for _, _, end in outcomes), default=start)
    return Fleet(outcomes, last - start, sum(t.is_alive() for t in threads))


def arm_result(arm: str, fleet: Fleet, expected: int, ideal: float) -> ArmResult:
    codes = Counter(code for code, _, _ in fleet.outcomes)
    latencies = [secs for code, secs, _ in fleet.outcomes if code == OK]
    return ArmResult(arm, expected, fleet.wall, ideal, latencies, codes, stuck=fleet.stuck)


def warm_up_line(arm: str, fleet: Fleet, sessions: int) -> str:
    codes = Counter(code for code, _, _ in fleet.outcomes)
    return (f"  {arm} warm-up: {sessions} sessions x 1 turn in {fleet.wall:.2f} s: "
            f"{dict(codes.most_common())}")


# --- Brain over HTTP ------------------------------------------------------------------------


def error_code(status: int, body: bytes) -> str:
    """`ok` for a 200 whose turn ended; else the status and the API's error code."""
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        return f"{status} (no JSON body)"
    if status == 200:
        if doc.get("status") == "ended":
            return OK
        error = doc.get("error") or {}
        return f"200 turn {doc.get('status')} ({error.get('code', '?')})"
    error = doc.get("error")
    return f"{status} {error.get('code', '?') if isinstance(error, dict) else '?'}"


class BrainSession:
    """One session's sync sends over one keep-alive connection, opened at its first turn."""

    def __init__(self, port: int, token: str, session_id: str) -> None:
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_SECS)
        self._path = f"/v1/sessions/{session_id}/messages"
        self._headers = {"Authorization": f"Bearer {token}",
                         "Content-Type": "application/json"}

    def turn(self, index: int) -> str:
        body = json.dumps({"input": f"fleet turn {index}"}).encode()
        try:
            self._conn.request("POST", self._path, body=body, headers=self._headers)
            resp = self._conn.getresponse()
            data = resp.read()
        except TimeoutError:
            self._conn.close()
            return f"timeout (no answer in {REQUEST_TIMEOUT_SECS:.0f} s)"
        except (OSError, http.client.HTTPException) as exc:
            self._conn.close()
            return f"connection: {type(exc).__name__}"
        if resp.will_close:
            self._conn.close()
        return error_code(resp.status, data)

    def close(self) -> None:
        self._conn.close()
