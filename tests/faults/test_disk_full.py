"""The data dir's filesystem fills up mid-turn, and during a checkpoint write.

The commit that finds no space fails, its effect is not sent, the waiting client gets a 500
`internal` in the contract's error shape (docs/decisions.md, "A journal that cannot be
written"), the session stays readable and verifies, an idempotent retry never reruns the
request, and once space returns the session takes the next turn. A checkpoint that cannot be
written leaves no torn copy, and the journal stays canonical.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults.checks import journal, kinds, unmatched_starts, verify
from tests.faults.smallfs import fill, free_space, small_filesystem
from tests.faults.support import post_turn, slow_tool_server
from tests.support.server import BrainServer
from tests.support.waiting import wait_for
from tests.tools.toolserver import ToolServer


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[BrainServer, ToolServer, Path]]:
    # The answer spans pages: on tmpfs a commit that fits the last page needs no new space.
    with (small_filesystem(tmp_path / "data", size_mib=48) as mount,
          slow_tool_server(tmp_path, mount, delay_ms=2000,
                           text="thinking " * 3000) as (server, tool)):
        yield server, tool, mount


def test_disk_full_mid_turn_fails_the_commit_and_sends_nothing(env) -> None:  # type: ignore[no-untyped-def]
    server, tool, mount = env
    sid = server.create_session(model="slowtool", tools=["remote"])["id"]
    answer: dict[str, Any] = {}
    client = threading.Thread(
        target=lambda: answer.update(resp=post_turn(server, sid, "use the tool", "key-1")))
    client.start()
    wait_for(lambda: "model_call_started" in kinds(journal(mount, sid)),
             what="the model call under way")
    fill(mount)  # the model's answer (a tool call) finds no space to be committed
    client.join(timeout=60)
    assert not client.is_alive(), "the client must be answered, not left waiting"

    failed = answer["resp"]
    assert failed.status_code == 500, failed.text
    assert failed.json()["error"]["code"] == "internal"
    assert set(failed.json()["error"]) == {"code", "message", "request_id"}
    assert tool.requests == [], "an effect whose start could not be committed was sent"

    # Still readable, from the journal, while the disk is full.
    read = server.request("GET", f"/v1/sessions/{sid}")
    assert read.status_code == 200 and read.json()["id"] == sid, read.text
    assert server.request("GET", f"/v1/sessions/{sid}/events").status_code == 200
    assert verify(mount, sid) == ""
    assert "model_call_ended" not in kinds(journal(mount, sid))

    # The retry never reruns the request. While the disk is full the answer cannot be stored
    # yet (the claim is still open), or the store cannot even be consulted (a 500 `internal`,
    # whichever SQLite's WAL still had room for); the journal below shows nothing ran again.
    retry = post_turn(server, sid, "use the tool", "key-1")
    code = retry.json()["error"]["code"]
    assert (retry.status_code, code) in ((409, "request_in_progress"), (500, "internal")), \
        retry.text

    free_space(mount)
    again = post_turn(server, sid, "hello", "key-2")
    assert again.status_code == 200 and again.json()["status"] == "ended", again.text
    # Once space returned, the answer the client got is stored, and replayed byte for byte.
    wait_for(lambda: post_turn(server, sid, "use the tool", "key-1").content == failed.content,
             timeout=30, what="the first answer stored and replayed")

    records = journal(mount, sid)
    assert kinds(records).count("turn_started") == 2  # the retry ran nothing
    assert kinds(records).count("model_call_started") == 2  # nothing was resent
    first_end = next(r for r in records if r["kind"] == "turn_failed")
    assert first_end["error"]["code"] == "interrupted"
    assert unmatched_starts(records) == []
    assert tool.requests == []
    assert verify(mount, sid) == ""


def big_transcript(size: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": "x" * size}]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]


def test_disk_full_during_a_checkpoint_leaves_no_torn_copy(env) -> None:  # type: ignore[no-untyped-def]
    server, _, mount = env
    sid = server.create_session(transcript=big_transcript(2 << 20))["id"]
    session_dir = mount / "sessions" / sid
    assert (session_dir / "checkpoint").exists()
    fill(mount, leave_bytes=256 << 10)  # room for the turn's records, not for a checkpoint
    done = post_turn(server, sid, "hello")
    assert done.status_code == 200 and done.json()["status"] == "ended", done.text
    assert sorted(p.name for p in session_dir.iterdir()) == ["checkpoint", "journal"], \
        "a checkpoint write that found no space left a torn copy behind"

    free_space(mount)
    expected = server.request("GET", f"/v1/sessions/{sid}/transcript").json()
    assert len(expected["messages"]) == 4
    # A torn checkpoint (as a lost tail would leave it) is never trusted either.
    data = (session_dir / "checkpoint").read_bytes()
    (session_dir / "checkpoint").write_bytes(data[: len(data) // 2])
    server.kill()
    server.start()
    assert server.request("GET", f"/v1/sessions/{sid}/transcript").json() == expected
    assert server.send(sid, "next")["status"] == "ended"
    assert verify(mount, sid) == ""
    assert unmatched_starts(journal(mount, sid)) == []
