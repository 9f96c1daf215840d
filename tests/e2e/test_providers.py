"""Real providers behind a real server: live deltas, failure outcomes, and no secret leaks."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from brain.journal import JournalScan
from tests.models.fakes import (
    FakeServer,
    json_answer,
    openai_chunk,
    openai_frames,
    sse_answer,
)
from tests.support.server import BrainServer, configured
from tests.support.sse import SseClient

SECRET = "sk-test-SECRET-9f8e7d6c5b4a"


def config_for(fake: FakeServer) -> str:
    return (f'[models.remote]\nprovider = "openai"\nbase_url = "{fake.url}/v1"\n'
            f'model = "fake-model"\napi_key_env = "FAKE_API_KEY"\n')


def start(tmp_path: Path, fake: FakeServer) -> BrainServer:
    return configured(tmp_path, config_for(fake), {
        "FAKE_API_KEY": SECRET, "BRAIN_TRACE": str(tmp_path / "trace.jsonl")}).start()


def journal_records(server: BrainServer, sid: str) -> list[dict]:
    return [f.record for f in JournalScan(server.data_dir / "sessions" / sid / "journal")]


def test_streamed_deltas_are_live_only(tmp_path: Path) -> None:
    pieces = ["Hel", "lo, ", "world"]
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": p}) for p in pieces]
    chunks.append(openai_chunk({}, finish="stop"))
    with FakeServer() as fake:
        fake.answer(sse_answer(openai_frames(chunks), gap=0.3))
        server = start(tmp_path, fake)
        try:
            sid = server.create_session(model="remote")["id"]
            live = SseClient("127.0.0.1", server.port, f"/v1/sessions/{sid}/events",
                             server.token)
            sender = threading.Thread(target=server.send, args=(sid, "greet me"))
            sender.start()
            frames = []
            while not any(f.event == "turn_ended" for f in frames):
                frames += live.events(1, timeout=30)
            sender.join(timeout=30)
            live.close()
            deltas = [json.loads(f.data) for f in frames if f.event == "model_delta"]
            assert [d["delta"] for d in deltas] == pieces
            assert all(f.id is None for f in frames if f.event == "model_delta")
            started = next(json.loads(f.data) for f in frames
                           if f.event == "model_call_started")
            assert {d["started"] for d in deltas} == {started["sequence"]}

            records = journal_records(server, sid)
            assert "model_delta" not in {r["kind"] for r in records}
            [ended] = [r for r in records if r["kind"] == "model_call_ended"]
            assert ended["result"]["message"]["content"] == [{"type": "text",
                                                              "text": "Hello, world"}]
            again = SseClient("127.0.0.1", server.port, f"/v1/sessions/{sid}/events",
                              server.token)
            replay = again.events(len(server.events(sid)))
            again.close()
            assert "model_delta" not in {f.event for f in replay}
            assert any(f.event == "model_call_ended" for f in replay)

            [request] = fake.requests
            assert request.headers["authorization"] == f"Bearer {SECRET}"
            assert request.body["model"] == "fake-model" and request.body["stream"] is True
        finally:
            server.kill()


def test_failures_have_exact_outcomes_and_the_key_never_leaks(tmp_path: Path) -> None:
    with FakeServer() as fake:
        fake.answer(
            json_answer(429, {"error": {"message": f"slow down, {SECRET}"}}),
            json_answer(500, {"error": {"message": "upstream broke"}}),
            sse_answer(openai_frames([openai_chunk({"content": "par"})], done=False), cut=True),
        )
        server = start(tmp_path, fake)
        try:
            sid = server.create_session(model="remote")["id"]
            for _ in range(3):
                result = server.send(sid, "try")
                assert result["status"] == "failed"
                assert SECRET not in json.dumps(result)
            failed = [e["data"] for e in server.events(sid) if e["kind"] == "model_call_failed"]
            assert [(f["outcome"], f["error"].get("status")) for f in failed] == [
                ("error", 429), ("error", 500), ("unknown", None)]
            assert len(fake.requests) == 3  # one request per call, never a retry
        finally:
            server.kill()
    leaks = []
    for path in tmp_path.rglob("*"):
        if path.is_file() and SECRET.encode() in path.read_bytes():
            leaks.append(str(path))
    assert leaks == [], f"the API key was written to {leaks}"
    assert (tmp_path / "trace.jsonl").stat().st_size > 0  # tracing was on and was searched
