"""Python Agentloops on a real server: configured by name like any other, compiled once when
the server starts, suspended and resumed by replay while they wait, and a misbehaving one fails
only its own turn (issue 29)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from brain.agentloop.artifacts import why_not_whole
from brain.agentloop.components import artifact_name
from brain.journal import JournalScan
from tests.support.python_guests import python_guest
from tests.support.server import TEST_AGENTLOOP_CACHE, BrainServer, configured

MODEL_SECS = 2.0

# The loops run on componentize-py's own Python inside Wasm, not on the one running Brain.
pytestmark = pytest.mark.slow_e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    tmp = tmp_path_factory.mktemp("python-loops")
    default, bad = python_guest("default_loop"), python_guest("bad_guest")
    config = f"""
[agentloops.py_default]
path = "{default}"
[agentloops.bad]
path = "{bad}"

[models.slow]
provider = "scripted"
script = [ {{ text = "answered", delay_ms = {int(MODEL_SECS * 1000)} }} ]

[models.napper]
provider = "scripted"
script = [
  {{ tool_calls = [ {{ name = "nap", input = {{ seconds = 1 }} }},
                    {{ name = "nap", input = {{ seconds = 1 }} }} ], delay_ms = 300 }},
  {{ text = "rested", delay_ms = 300 }},
]

[tools.nap]
route = "builtin"
function = "sleep"
description = "Sleep for `seconds`."
"""
    s = configured(tmp, config, {"BRAIN_SESSION_POOL_SIZE": "1",
                                 "BRAIN_MAX_SESSION_ACTORS": "1",
                                 "BRAIN_MAX_TURN_SECS": "6"})
    try:
        yield s.start()
    finally:
        s.kill()


def kinds(server: BrainServer, session_id: str) -> list[str]:
    journal = server.data_dir / "sessions" / session_id / "journal"
    return [frame.record["kind"] for frame in JournalScan(journal)]


def test_the_server_compiled_each_configured_component_before_serving(
        server: BrainServer) -> None:
    import hashlib

    cache = TEST_AGENTLOOP_CACHE  # the machine's cache, as the test servers see it
    for name in ("default_loop", "bad_guest"):
        sha = hashlib.sha256(python_guest(name).read_bytes()).hexdigest()
        assert why_not_whole(cache / artifact_name(sha)) is None  # stored with its checksum


def test_a_tool_turn_waits_suspended_and_resumes_in_a_fresh_instance(
        server: BrainServer) -> None:
    sid = server.create_session(agentloop="py_default", model="napper", tools=["nap"])["id"]
    result = server.send(sid, "take a rest")
    assert (result["status"], result.get("output")) == ("ended", "rested"), result
    journal = kinds(server, sid)
    assert journal.count("activation_started") == 1 and journal.count("activation_ended") == 1
    assert journal.count("tool_call_started") == 2 and journal.count("tool_call_ended") == 2
    assert journal.count("model_call_started") == 2
    transcript = server.request("GET", f"/v1/sessions/{sid}/transcript").json()["messages"]
    assert [m["role"] for m in transcript] == ["user", "assistant", "tool", "assistant"]


def test_waiting_python_turns_share_one_session_actor(server: BrainServer) -> None:
    ids = [server.create_session(agentloop="py_default", model="slow")["id"] for _ in range(4)]
    started = time.monotonic()
    with ThreadPoolExecutor(len(ids)) as pool:
        results = list(pool.map(lambda sid: server.send(sid, "hi"), ids))
    wall = time.monotonic() - started
    assert [r["output"] for r in results] == ["answered"] * 4
    assert wall < 3 * MODEL_SECS, f"four waits on one actor took {wall:.1f} s, not one wait"


@pytest.mark.parametrize("misbehaviour, code, words", [
    ("raise", "agentloop_error", "ValueError: the loop gave up (bad_guest.py, line"),
    ("spin", "turn_timeout", "BRAIN_MAX_TURN_SECS"),
    ("alloc", "agentloop_error", "MemoryError"),
    ("clock", "agentloop_error", "RuntimeError: an Agentloop has no clock"),
])
def test_a_misbehaving_python_loop_fails_its_turn_and_keeps_the_session(
        server: BrainServer, misbehaviour: str, code: str, words: str) -> None:
    sid = server.create_session(agentloop="bad")["id"]
    result = server.send(sid, misbehaviour)
    assert (result["status"], result["error"]["code"]) == ("failed", code)
    assert words in result["error"]["message"]
    # A Python exception is the loop's own failed result (activation_ended); a trap is not
    # (activation_failed). Either way the turn fails.
    assert kinds(server, sid)[-1] == "turn_failed"
    follow_up = server.send(sid, "kv")
    assert follow_up["status"] == "ended"
    expected = "committed" if misbehaviour == "raise" else None  # kv.put before the raise
    assert follow_up["output"] == expected
