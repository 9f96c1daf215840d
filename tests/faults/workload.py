"""The mixed client workload of the crash torture, and the ledger of what clients were told.

Every request carries a unique input (`<tag>-<n>`), so the journal shows at once whether any
request ran twice. Each worker drives one session; SSE followers resume with Last-Event-ID
after every kill. Everything a client received goes into the ledger, which the torture
compares with the journals after each restart.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import requests

from tests.support.server import BrainServer
from tests.support.sse import SseClient

CLIENT_TIMEOUT_SECS = 15.0
_numbers = itertools.count(1)


@dataclass
class Answer:
    """One request and what its client got (status None: the connection failed)."""

    session_id: str
    op: str
    input: str
    key: str | None
    status: int | None = None
    body: bytes = b""
    epoch: int = 0

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Ledger:
    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: list[Answer] = field(default_factory=list)

    def add(self, answer: Answer) -> None:
        with self.lock:
            self.answers.append(answer)

    def snapshot(self) -> list[Answer]:
        with self.lock:
            return list(self.answers)


def host_script(n: int) -> str:
    """An Agentloop script: a kv write, an extension Event and an http Tool call."""
    return json.dumps([
        {"op": "kv.put", "key": f"k{n % 5}", "value": n},
        {"op": "events.emit", "kind": "torture_mark", "data": {"n": n}},
        {"op": "tools.call", "calls": [{"id": f"c{n}", "name": "remote", "input": {"n": n}}]},
    ])


class Worker(threading.Thread):
    """Drives one session with a random mix until stopped; `kind` is "model" or "script"."""

    def __init__(self, server: BrainServer, session_id: str, kind: str, ledger: Ledger,
                 epoch: list[int], stop: threading.Event, gate: threading.Event,
                 seed: int) -> None:
        super().__init__(daemon=True, name=f"worker-{session_id}")
        self.server, self.session_id, self.kind = server, session_id, kind
        self.ledger, self.epoch, self.stop = ledger, epoch, stop
        self.gate = gate  # cleared while the torture checks the journals
        self.parked = threading.Event()
        self.rng = random.Random(seed)

    def run(self) -> None:
        while not self.stop.is_set():
            if not self.gate.is_set():
                self.parked.set()
                self.gate.wait(1.0)
                continue
            self.parked.clear()
            n = next(_numbers)
            choice = self.rng.random()
            if self.kind == "script":
                text, op = host_script(n), "send"
            elif choice < 0.3:
                text, op = f"tools-{n}", "send"  # a tool loop
            elif choice < 0.6:
                text, op = f"text-{n}", "send"
            else:
                text, op = f"submit-{n}", "submit"
            keyed = op == "submit" or choice > 0.8
            self.request(op, text, f"key-{n}" if keyed else None)
            if op == "submit":
                self.stop.wait(self.rng.uniform(0.05, 0.4))

    def request(self, op: str, text: str, key: str | None) -> None:
        answer = Answer(self.session_id, op, text, key, epoch=self.epoch[0])
        headers = {"Authorization": f"Bearer {self.server.token}"}
        if key:
            headers["Idempotency-Key"] = key
        if op == "submit":
            headers["Prefer"] = "respond-async"
        try:
            resp = requests.post(f"{self.server.url}/v1/sessions/{self.session_id}/messages",
                                 json={"input": text}, headers=headers,
                                 timeout=CLIENT_TIMEOUT_SECS)
            answer.status, answer.body = resp.status_code, resp.content
        except requests.RequestException:
            self.stop.wait(0.2)  # the server is down: the killer restarts it
        self.ledger.add(answer)


class Follower(threading.Thread):
    """Follows one session's SSE stream across kills, resuming with Last-Event-ID."""

    def __init__(self, server: BrainServer, session_id: str, stop: threading.Event) -> None:
        super().__init__(daemon=True, name=f"follower-{session_id}")
        self.server, self.session_id, self.stop = server, session_id, stop
        self.seen: list[int] = []
        self.reconnects = 0

    def run(self) -> None:
        while not self.stop.is_set():
            last = str(self.seen[-1]) if self.seen else None
            try:
                client = SseClient("127.0.0.1", self.server.port,
                                   f"/v1/sessions/{self.session_id}/events",
                                   self.server.token, last_event_id=last, timeout=5)
            except OSError:
                self.stop.wait(0.2)
                continue
            self.reconnects += 1
            try:
                if client.status != 200:
                    continue
                while not self.stop.is_set():
                    frame = client.next_frame(timeout=2.0)
                    if frame is None:
                        break
                    if frame.id is not None:
                        self.seen.append(int(frame.id))
            except (OSError, TimeoutError):
                pass
            finally:
                client.close()

    def caught_up(self, last: int) -> bool:
        return bool(self.seen) and self.seen[-1] >= last


def wait_idle(server: BrainServer, session_ids: list[str], timeout: float = 60.0) -> None:
    """Until no session has a turn running (in-flight turns finish or were recovered)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        statuses = [server.request("GET", f"/v1/sessions/{sid}").json()["status"]
                    for sid in session_ids]
        if all(status != "running" for status in statuses):
            return
        time.sleep(0.1)
    raise TimeoutError(f"sessions still running after {timeout} s")
