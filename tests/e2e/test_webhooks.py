"""Webhooks when a turn is over, against a real server and a real receiver on a real socket.

The receiver is an `http.server` in a thread of the test process; it records every POST and
answers 500 to as many first attempts as a test asks. Signatures are checked here with the
Standard Webhooks rule written out independently of brain/net/webhook_signature.py.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from brain.journal.scan import JournalScan
from tests.support.server import BrainServer, configured
from tests.support.waiting import wait_for

KEY = b"brain-webhook-test-key-32-bytes!"
SECRET = "whsec_" + base64.b64encode(KEY).decode()
FAST_THEN_SLOW = """
[models.fast_then_slow]
provider = "scripted"
script = [ { when_last_user_matches = "slow", text = "two", delay_ms = 3000 },
           { text = "one" } ]
"""
SLOW_MODEL = """
[models.slow]
provider = "scripted"
script = [ { text = "late", delay_ms = 30000 } ]
"""


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    status: int  # what the receiver answered
    at: float  # time.monotonic() when it arrived


class Receiver:
    """A webhook receiver: answers 500 to the first `fail_first` POSTs, then 204, after
    `delay` seconds each."""

    def __init__(self, fail_first: int = 0, delay: float = 0.0) -> None:
        self.fail_first = fail_first
        self.delay = delay
        self.received: list[Received] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                time.sleep(receiver.delay)
                with receiver.lock:
                    failing = len(receiver.received) < receiver.fail_first
                    status = 500 if failing else 204
                    receiver.received.append(Received(
                        {k.lower(): v for k, v in self.headers.items()}, body, status,
                        time.monotonic()))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/brain"

    def posts(self) -> list[Received]:
        with self.lock:
            return list(self.received)

    def wait_posts(self, count: int, timeout: float = 30.0) -> list[Received]:
        return wait_for(lambda: self.posts() if len(self.posts()) >= count else None,
                        timeout=timeout, what=f"{count} webhook POSTs")

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def verified(post: Received, now: float | None = None) -> dict:
    """The body, once its signature is checked as a receiver would: HMAC-SHA256 of
    `{id}.{timestamp}.{body}` with the decoded key, any `v1,` entry matching, the timestamp
    within five minutes."""
    msg_id = post.headers["webhook-id"]
    timestamp = post.headers["webhook-timestamp"]
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + post.body
    expected = base64.b64encode(hmac.new(KEY, signed, hashlib.sha256).digest()).decode()
    offered = [part.split(",", 1)[1] for part in post.headers["webhook-signature"].split()
               if part.startswith("v1,")]
    assert any(hmac.compare_digest(expected, sig) for sig in offered), "bad signature"
    assert abs((now or time.time()) - int(timestamp)) < 300
    return json.loads(post.body)


def webhook_env(receiver: Receiver, **extra: str) -> dict[str, str]:
    return {"BRAIN_WEBHOOK_URL": receiver.url, "BRAIN_WEBHOOK_SECRET": SECRET,
            "BRAIN_WEBHOOK_RETRY_MS": "300", **extra}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


def journal_kinds(data_dir: Path, session_id: str) -> list[str]:
    """Every record's kind, private ones included, read from the journal's files."""
    return [frame.record["kind"]
            for frame in JournalScan(data_dir / "sessions" / session_id / "journal")]


def journal_bytes(data_dir: Path, session_id: str) -> bytes:
    return b"".join(p.read_bytes() for p in (data_dir / "sessions" / session_id).rglob("*")
                    if p.is_file())


def test_a_turn_that_ends_is_posted_once_signed(tmp_path: Path, receiver: Receiver) -> None:
    server = configured(tmp_path, "", webhook_env(receiver)).start()
    try:
        sid = server.create_session()["id"]
        result = server.send(sid, "hello")
        [post] = receiver.wait_posts(1)
        body = verified(post)
        assert body == {"session_id": sid, "sequence": result["sequence"],
                        "kind": "turn_ended", "status": "ended"}
        prefix, _, terminal = post.headers["webhook-id"].rpartition("_")
        assert prefix == f"msg_{sid}" and int(terminal) > body["sequence"]
        assert post.headers["content-type"] == "application/json"
        # Delivery records are private: the Events are those of a server with no webhook.
        kinds = [e["kind"] for e in server.events(sid)]
        assert not [k for k in kinds if k.startswith("webhook")]
        # Done is journaled (a restart resumes nothing), and the secret is nowhere on disk.
        wait_for(lambda: b"webhook_delivery_done" in journal_bytes(server.data_dir, sid),
                 what="the delivery's done record")
        raw = journal_bytes(server.data_dir, sid)
        assert SECRET.encode() not in raw and KEY not in raw
        assert base64.b64encode(KEY) not in raw
        time.sleep(1.0)
        assert len(receiver.posts()) == 1  # once: a 2xx ends the delivery
        # A second turn is a second delivery, with its own id.
        server.send(sid, "again")
        second = receiver.wait_posts(2)[1]
        assert verified(second)["sequence"] > body["sequence"]
        assert second.headers["webhook-id"] != post.headers["webhook-id"]
    finally:
        server.kill()
    assert SECRET not in server.log()


def test_failed_attempts_are_retried_with_the_same_id(tmp_path: Path) -> None:
    with Receiver(fail_first=2) as receiver:
        server = configured(tmp_path, "", webhook_env(receiver)).start()
        try:
            sid = server.create_session()["id"]
            server.send(sid, "hello")
            posts = receiver.wait_posts(3)
            assert [p.status for p in posts] == [500, 500, 204]
            assert len({p.headers["webhook-id"] for p in posts}) == 1
            bodies = [verified(p) for p in posts]
            assert bodies[0] == bodies[1] == bodies[2]
            # Backoff: 0.3 s, then 0.6 s (BRAIN_WEBHOOK_RETRY_MS=300, doubled).
            assert posts[1].at - posts[0].at >= 0.25
            assert posts[2].at - posts[1].at >= 0.5
            wait_for(lambda: journal_bytes(server.data_dir, sid).count(
                b"webhook_delivery_attempted") == 2
                and b"webhook_delivery_done" in journal_bytes(server.data_dir, sid),
                what="two attempted records and the done record")
            # The turn and the session are untouched by the failing receiver.
            assert server.request("GET", f"/v1/sessions/{sid}").json()["status"] == "idle"
            time.sleep(1.0)
            assert len(receiver.posts()) == 3
        finally:
            server.kill()


def test_a_delivery_is_abandoned_after_its_attempts(tmp_path: Path) -> None:
    with Receiver(fail_first=100) as receiver:
        env = webhook_env(receiver, BRAIN_WEBHOOK_ATTEMPTS="2", BRAIN_WEBHOOK_RETRY_MS="100")
        server = configured(tmp_path, "", env).start()
        try:
            sid = server.create_session()["id"]
            server.send(sid, "hello")
            receiver.wait_posts(2)
            wait_for(lambda: b"webhook_delivery_abandoned"
                     in journal_bytes(server.data_dir, sid), what="the abandoned record")
            time.sleep(1.0)
            assert len(receiver.posts()) == 2
            assert server.send(sid, "still works")["status"] == "ended"
        finally:
            server.kill()


def test_a_restart_between_attempts_resumes_the_delivery(tmp_path: Path) -> None:
    """SIGKILL after the first failed attempt, with the retry 20 s away: the next start finds
    the delivery pending in the journal and sends it at once, with the same webhook-id."""
    with Receiver(fail_first=1) as receiver:
        env = webhook_env(receiver, BRAIN_WEBHOOK_RETRY_MS="20000")
        server = configured(tmp_path, "", env).start()
        try:
            sid = server.create_session()["id"]
            server.send(sid, "hello")
            [first] = receiver.wait_posts(1)
            wait_for(lambda: b"webhook_delivery_attempted"
                     in journal_bytes(server.data_dir, sid), what="the attempted record")
            server.kill()
            assert len(receiver.posts()) == 1
            server = BrainServer(server.data_dir, env=server.extra_env).start()
            posts = receiver.wait_posts(2, timeout=15)  # not the 20 s retry: resumed at start
            assert posts[1].status == 204
            assert posts[1].headers["webhook-id"] == first.headers["webhook-id"]
            assert verified(posts[1]) == verified(first)
            wait_for(lambda: b"webhook_delivery_done" in journal_bytes(server.data_dir, sid),
                     what="the done record after the restart")
        finally:
            server.kill()


def test_a_turn_interrupted_by_a_crash_gets_its_webhook(tmp_path: Path,
                                                        receiver: Receiver) -> None:
    server = configured(tmp_path, SLOW_MODEL, webhook_env(receiver)).start()
    try:
        sid = server.create_session(model="slow")["id"]
        turn = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "hi"},
                              headers={"Prefer": "respond-async"}).json()["sequence"]
        wait_for(lambda: "model_call_started" in [e["kind"] for e in server.events(sid)],
                 what="the model call")
        server.kill()
        server = BrainServer(server.data_dir, env=server.extra_env).start()
        [post] = receiver.wait_posts(1)
        assert verified(post) == {"session_id": sid, "sequence": turn, "kind": "turn_failed",
                                  "status": "interrupted"}
    finally:
        server.kill()


def test_the_turn_does_not_wait_for_a_slow_receiver(tmp_path: Path) -> None:
    with Receiver(delay=8.0) as receiver:
        env = webhook_env(receiver, BRAIN_WEBHOOK_TIMEOUT_MS="30000")
        server = configured(tmp_path, "", env).start()
        try:
            sid = server.create_session()["id"]
            began = time.monotonic()
            assert server.send(sid, "hello")["status"] == "ended"
            assert server.send(sid, "again")["status"] == "ended"
            took = time.monotonic() - began
            assert took < 6.0, f"two turns took {took:.2f} s behind an 8 s receiver"
            assert len(receiver.wait_posts(2, timeout=30)) == 2
        finally:
            server.kill()


def test_deleting_a_session_stops_its_pending_delivery(tmp_path: Path) -> None:
    with Receiver(fail_first=100) as receiver:
        server = configured(tmp_path, "", webhook_env(receiver, BRAIN_WEBHOOK_RETRY_MS="400")
                            ).start()
        try:
            sid = server.create_session()["id"]
            server.send(sid, "hello")
            receiver.wait_posts(1)
            assert server.request("POST", f"/v1/sessions/{sid}/end").status_code == 200
            assert server.request("DELETE", f"/v1/sessions/{sid}").status_code in (200, 204)
            deleted = len(receiver.posts())
            time.sleep(1.6)  # past the next two retries (0.4 s, then 0.8 s)
            assert len(receiver.posts()) == deleted
        finally:
            server.kill()


def test_a_url_without_a_secret_is_refused_at_start(tmp_path: Path) -> None:
    server = BrainServer(tmp_path / "data", env={"BRAIN_WEBHOOK_URL": "http://127.0.0.1:9/"})
    with pytest.raises(RuntimeError) as refused:
        server.start()
    assert "BRAIN_WEBHOOK_SECRET" in str(refused.value)


def test_results_arriving_during_the_next_turn_wait_for_its_end(tmp_path: Path) -> None:
    """The first turn's delivery fails once and then succeeds while the second turn waits on
    a 3 s model (suspended): both results are journaled after the second turn's end, never
    among its records."""
    with Receiver(fail_first=1) as receiver:
        server = configured(tmp_path, FAST_THEN_SLOW, webhook_env(receiver)).start()
        try:
            sid = server.create_session(model="fast_then_slow")["id"]
            server.send(sid, "one")
            second = server.request("POST", f"/v1/sessions/{sid}/messages",
                                    json={"input": "slow"},
                                    headers={"Prefer": "respond-async"})
            assert second.status_code == 202, second.text
            posts = receiver.wait_posts(2)
            assert posts[0].headers["webhook-id"] == posts[1].headers["webhook-id"]
            assert [p.status for p in posts] == [500, 204]
            wait_for(lambda: len(receiver.posts()) == 3, timeout=30,
                     what="the second turn's webhook")
            assert verified(receiver.posts()[2])["sequence"] == second.json()["sequence"]
            wait_for(lambda: "webhook_delivery_done" in journal_kinds(server.data_dir, sid)
                     and journal_kinds(server.data_dir, sid).count("webhook_delivery_done") == 2,
                     what="both deliveries journaled done")
            kinds = journal_kinds(server.data_dir, sid)
            started = [i for i, k in enumerate(kinds) if k == "turn_started"][1]
            ended = [i for i, k in enumerate(kinds) if k in ("turn_ended", "turn_failed")][1]
            inside = kinds[started:ended + 1]
            assert not [k for k in inside if k.startswith("webhook_")], inside
            assert kinds[ended] == "turn_ended"
        finally:
            server.kill()


def test_the_delivery_leaves_after_its_pending_record_by_the_trace(tmp_path: Path,
                                                                  receiver: Receiver) -> None:
    """`brain trace --check` counts DeliverWebhook as an effect fenced by its pending record."""
    trace = tmp_path / "trace.jsonl"
    server = configured(tmp_path, "", webhook_env(receiver, BRAIN_TRACE=str(trace))).start()
    try:
        sid = server.create_session()["id"]
        server.send(sid, "hello")
        receiver.wait_posts(1)
        assert server.stop() == []  # SIGTERM: every process flushes its trace buffer at exit
    finally:
        server.kill()
    lines = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    [deliver] = [x for x in lines if x.get("dir") == "send" and x.get("msg") == "DeliverWebhook"]
    assert deliver["session_id"] == sid and deliver["fenced_by"] > 0
    checked = subprocess.run([sys.executable, "-m", "brain.cli", "trace", "--check", str(trace)],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("ok: 2 effect messages")  # the model call and the webhook
