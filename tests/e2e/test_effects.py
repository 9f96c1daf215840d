"""Brain's effect protocol through a real server (docs/concepts.md, "Effects",
"Transcript and Agentloop state"): Tools, extension Events, kv, transcript diffs, model context.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from brain.journal import JournalScan
from brain.sessions.transcript_diff import apply_delta
from tests.support.guests import example_guest
from tests.support.server import BrainServer, configured
from tests.tools.toolserver import ToolServer

CONFIG = """
[models.tooluser]
provider = "scripted"
script = [
  {{ tool_calls = [ {{ name = "echo", input = {{ a = 1 }} }},
                    {{ name = "echo", input = {{ b = 2 }} }} ] }},
  {{ text = "done" }},
]

[tools.emitter]
route = "builtin"
function = "emit"
description = "Emit the Events it is given."

[tools.remote]
route = "http"
url = "{remote_url}"
description = "A remote tool."

[tools.dropper]
route = "http"
url = "{dropper_url}"
description = "A remote tool whose connection drops after the request."

[agentloops.script]
path = "{script_wasm}"
"""


def drop_after_request(conn, req) -> None:  # type: ignore[no-untyped-def]
    conn.reset()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[tuple[BrainServer, ToolServer, ToolServer]]:
    """One server for the module: each test works in a session of its own, and only
    test_http_tool_outcomes_and_exactly_one_delivery calls the two http Tools."""
    tmp_path = tmp_path_factory.mktemp("effects")
    remote = ToolServer()
    dropper = ToolServer(drop_after_request)
    server = configured(tmp_path, CONFIG.format(remote_url=remote.url, dropper_url=dropper.url,
                                                script_wasm=example_guest("host_script")),
                        {"BRAIN_MAX_EMITTED_BYTES": "300"})
    try:
        server.start()
        yield server, remote, dropper
    finally:
        server.kill()
        remote.close()
        dropper.close()


def run_script(server: BrainServer, sid: str, requests: list[dict]) -> list[dict]:
    result = server.send(sid, json.dumps(requests))
    assert result["status"] == "ended", result
    return result["output"]


def journal(server: BrainServer, sid: str) -> list[dict]:
    return [frame.record for frame in JournalScan(server.data_dir / "sessions" / sid / "journal")]


def test_default_loop_runs_parallel_tool_calls(env) -> None:  # type: ignore[no-untyped-def]
    server, _, _ = env
    sid = server.create_session(model="tooluser", tools=["echo"])["id"]
    result = server.send(sid, "use your tools")
    assert (result["status"], result["output"]) == ("ended", "done")
    events = server.events(sid)
    started = [e for e in events if e["kind"] == "tool_call_started"]
    ended = [e for e in events if e["kind"] == "tool_call_ended"]
    assert [e["data"]["tool"] for e in started] == ["echo", "echo"]
    assert [e["data"]["invocation"]["input"] for e in started] == [{"a": 1}, {"b": 2}]
    assert all(e["data"]["invocation"]["id"] for e in started)
    assert all(isinstance(e["data"]["deadline"], float) for e in started)
    assert sorted(e["data"]["started"] for e in ended) == [e["sequence"] for e in started]
    assert all(e["data"]["outcome"] == "ok" and not e["data"]["result"]["is_error"]
               for e in ended)
    messages = server.request("GET", f"/v1/sessions/{sid}/transcript").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    results = messages[2]["content"]
    assert [r["content"] for r in results] == [{"a": 1}, {"b": 2}]
    ids = [b["id"] for b in messages[1]["content"] if b["type"] == "tool_call"]
    assert [r["tool_call_id"] for r in results] == ids
    assert [e["data"]["invocation"]["id"] for e in started] == ids


def test_model_context_rebuilds_the_exact_request(env) -> None:  # type: ignore[no-untyped-def]
    server, _, _ = env
    sid = server.create_session(agentloop="script")["id"]
    user = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    aux = {"role": "user", "content": [{"type": "text", "text": "classify: hello"}]}
    run_script(server, sid, [
        {"op": "transcript.set", "messages": [user]},
        {"op": "model.call", "messages": [user]},  # the saved conversation
        {"op": "model.call", "messages": [aux]},  # an auxiliary context
        {"op": "model.call", "messages": [user, aux]},  # an append
    ])
    records = journal(server, sid)
    transcripts = {0: []}
    saved: list = []
    for record in records:
        if record["kind"] == "transcript_changed":
            saved = apply_delta(saved, record)
        transcripts[record["seq"]] = saved
    calls = [r for r in records if r["kind"] == "model_call_started"]
    rebuilt = [apply_delta(transcripts[c["context"]["through_sequence"]], c["context"]["delta"])
               for c in calls]
    assert rebuilt == [[user], [aux], [user, aux]]
    assert [c["message_count"] for c in calls] == [1, 1, 2]
    assert calls[0]["context"]["delta"]["items"] == []  # no copy of the saved conversation


def test_transcript_set_commits_only_the_difference(env) -> None:  # type: ignore[no-untyped-def]
    server, _, _ = env
    sid = server.create_session(agentloop="script")["id"]
    a, b, c = ({"role": "user", "content": [{"type": "text", "text": t}]} for t in "abc")
    out = run_script(server, sid, [
        {"op": "transcript.set", "messages": [a, b]},
        {"op": "transcript.set", "messages": [a, b, c]},  # pure append
        {"op": "transcript.set", "messages": [a, b, c]},  # unchanged
        {"op": "transcript.set", "messages": [c]},  # a summary replaces the history
    ])
    assert out[2] == {"sequence": None}
    changes = [r for r in journal(server, sid) if r["kind"] == "transcript_changed"]
    assert [(r["start"], len(r["items"]), r["length"]) for r in changes] == [
        (0, 2, 2), (2, 1, 3), (0, 1, 1)]
    replaced = [e for e in server.events(sid) if e["kind"] == "transcript_replaced"]
    assert [e["sequence"] for e in replaced] == [out[3]["sequence"]]
    assert server.request("GET", f"/v1/sessions/{sid}/transcript").json()["messages"] == [c]


def test_kv_missing_differs_from_null_across_turns(env) -> None:  # type: ignore[no-untyped-def]
    server, _, _ = env
    sid = server.create_session(agentloop="script")["id"]
    first = run_script(server, sid, [{"op": "kv.read", "key": "k"},
                                     {"op": "kv.put", "key": "k", "value": None}])
    assert first[0] == {"found": False, "value": None}
    second = run_script(server, sid, [{"op": "kv.read", "key": "k"},
                                      {"op": "kv.delete", "key": "k"},
                                      {"op": "kv.delete", "key": "k"}])
    assert second[0] == {"found": True, "value": None}  # a fresh instance, the same state
    assert isinstance(second[1]["sequence"], int) and second[2] == {"sequence": None}
    third = run_script(server, sid, [{"op": "kv.read", "key": "k"}])
    assert third[0] == {"found": False, "value": None}
    public = {e["kind"] for e in server.events(sid)}
    assert not public & {"kv_put", "kv_delete"}  # kv stays private


def test_extension_events_carry_brain_assigned_origin(env) -> None:  # type: ignore[no-untyped-def]
    server, _, _ = env
    sid = server.create_session(agentloop="script", tools=["emitter"])["id"]
    out = run_script(server, sid, [
        {"op": "events.emit", "kind": "plan", "data": {"origin": {"kind": "tool", "sequence": 1}}},
        {"op": "events.emit", "kind": "turn_ended", "data": {}},
        {"op": "tools.call", "calls": [{"name": "emitter", "input": {
            "events": [{"kind": "progress", "data": {"pct": 50}}]}}]},
        {"op": "tools.call", "calls": [{"name": "nope", "input": {}}]},
    ])
    assert isinstance(out[0]["sequence"], int)
    assert out[1]["error"]["code"] == "invalid_request"  # a reserved name
    assert out[2]["results"][0]["outcome"] == "ok"
    assert out[3]["error"]["code"] == "invalid_request"  # an unconfigured tool
    events = server.events(sid)
    activation = next(e for e in events if e["kind"] == "activation_started")
    tool_started = [e for e in events if e["kind"] == "tool_call_started"]
    assert len(tool_started) == 1  # the refused call left no record
    plan = next(e for e in events if e["kind"] == "plan")
    assert plan["origin"] == {"kind": "agentloop", "sequence": activation["sequence"]}
    assert plan["data"] == {"origin": {"kind": "tool", "sequence": 1}}  # payload, not origin
    progress = next(e for e in events if e["kind"] == "progress")
    assert progress["origin"] == {"kind": "tool", "sequence": tool_started[0]["sequence"]}
    assert [e["kind"] for e in events].count("turn_ended") == 1


def test_over_the_emit_budget_the_turn_fails_with_emit_limit(env) -> None:  # type: ignore[no-untyped-def]
    """The refused Event commits nothing, the loop hears emit_limit, the turn fails with it, and
    kv written before (and after) the refusal stays: kv is durable independently of the turn."""
    server, _, _ = env
    sid = server.create_session(agentloop="script", tools=["emitter"])["id"]
    script = [
        {"op": "kv.put", "key": "before", "value": 1},
        {"op": "events.emit", "kind": "fits", "data": "x" * 100},
        {"op": "events.emit", "kind": "big", "data": "x" * 400},
        {"op": "kv.put", "key": "after", "value": 2},
    ]
    result = server.send(sid, json.dumps(script))
    assert result["status"] == "failed"
    assert result["error"]["code"] == "emit_limit", result
    events = server.events(sid)
    kinds = [e["kind"] for e in events]
    assert "fits" in kinds and "big" not in kinds
    assert kinds[-1] == "turn_failed"
    # the next turn sees both keys: they were committed whatever became of the turn
    out = run_script(server, sid, [{"op": "kv.read", "key": "before"},
                                   {"op": "kv.read", "key": "after"}])
    assert out == [{"found": True, "value": 1}, {"found": True, "value": 2}]


def test_http_tool_outcomes_and_exactly_one_delivery(env) -> None:  # type: ignore[no-untyped-def]
    server, remote, dropper = env
    sid = server.create_session(agentloop="script", tools=["remote", "dropper"])["id"]
    out = run_script(server, sid, [{"op": "tools.call", "calls": [
        {"id": "c1", "name": "remote", "input": {"q": 1}},
        {"id": "c2", "name": "dropper", "input": {"q": 2}},
    ]}])
    [ok, lost] = out[0]["results"]
    assert ok == {"content": {"got": {"q": 1}}, "is_error": False, "outcome": "ok"}
    assert lost["outcome"] == "unknown" and lost["is_error"] is True
    assert len(remote.requests) == 1 and len(dropper.requests) == 1  # never resent
    body = remote.requests[0].body
    started = [e for e in server.events(sid) if e["kind"] == "tool_call_started"]
    assert body["session_id"] == sid and body["sequence"] == started[0]["sequence"]
    assert body["invocation"] == {"id": "c1", "input": {"q": 1}}
    failed = next(e for e in server.events(sid) if e["kind"] == "tool_call_failed")
    assert failed["data"]["outcome"] == "unknown"
    assert failed["data"]["result"]["is_error"] is True
