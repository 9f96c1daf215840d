"""One durable turn through every real part: gunicorn+gevent, Thespian, wasmtime, the journal."""

from __future__ import annotations

from pathlib import Path

from tests.support.server import BrainServer

TURN_KINDS = ["turn_started", "activation_started", "model_call_started", "model_call_ended",
              "activation_ended", "turn_ended"]


def public_turn_kinds(events: list[dict]) -> list[str]:
    return [e["kind"] for e in events if e["kind"] in TURN_KINDS]


def test_two_turns_survive_sigkill_and_restart(tmp_path: Path) -> None:
    server = BrainServer(tmp_path / "data").start()
    try:
        session = server.create_session()
        sid = session["id"]
        assert session["status"] == "idle"
        first = server.send(sid, "hello there")
        second = server.send(sid, "and again")
        assert first["status"] == "ended" and "hello there" in first["output"]
        assert second["status"] == "ended" and "and again" in second["output"]

        events = server.events(sid)
        assert events[0]["kind"] == "session_created"
        assert public_turn_kinds(events) == TURN_KINDS * 2
        sequences = [e["sequence"] for e in events]
        assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)
        by_kind: dict[str, list[dict]] = {}
        for event in events:
            by_kind.setdefault(event["kind"], []).append(event)
        for started, ended in zip(by_kind["model_call_started"], by_kind["model_call_ended"],
                                  strict=True):
            assert ended["data"]["started"] == started["sequence"]
            assert ended["sequence"] > started["sequence"]
        for started, ended in zip(by_kind["turn_started"], by_kind["turn_ended"], strict=True):
            assert ended["data"]["started"] == started["sequence"]
        assert first["sequence"] == by_kind["turn_started"][0]["sequence"]

        transcript = server.request("GET", f"/v1/sessions/{sid}/transcript").json()
        texts = [block["text"] for m in transcript["messages"] for block in m["content"]
                 if block["type"] == "text"]
        roles = [m["role"] for m in transcript["messages"]]
        assert roles == ["user", "assistant", "user", "assistant"]
        assert texts[0] == "hello there" and texts[2] == "and again"
        assert transcript["through_sequence"] == events[-1]["sequence"]
        status = server.request("GET", f"/v1/sessions/{sid}").json()

        server.kill()  # SIGKILL: no shutdown path runs
        server = BrainServer(tmp_path / "data")
        server.start()
        assert server.events(sid) == events
        assert server.request("GET", f"/v1/sessions/{sid}/transcript").json() == transcript
        assert server.request("GET", f"/v1/sessions/{sid}").json() == status
        third = server.send(sid, "after the crash")
        assert third["status"] == "ended"
        assert third["sequence"] > events[-1]["sequence"]
    finally:
        server.kill()


def test_sigterm_leaves_no_process_behind(tmp_path: Path) -> None:
    server = BrainServer(tmp_path / "data").start()
    try:
        sid = server.create_session()["id"]
        assert server.send(sid, "one turn so actors exist")["status"] == "ended"
    finally:
        left = server.stop()
    assert left == [], f"processes still alive after SIGTERM: {left}"


def test_bad_input_gets_contract_errors(brain_server: BrainServer) -> None:
    def error_of(resp):  # type: ignore[no-untyped-def]
        body = resp.json()
        assert set(body["error"]) == {"code", "message", "request_id"}, body
        return resp.status_code, body["error"]["code"]

    s = brain_server
    assert error_of(s.request("GET", "/v1/sessions/nope")) == (404, "not_found")
    assert error_of(s.request("GET", "/v1/sessions/..%2F..%2Fetc")) == (404, "not_found")
    assert error_of(s.request("GET", "/v1/nothing-here")) == (404, "not_found")
    assert error_of(s.request("GET", "/v1/sessions/nope", token=None)) == (401, "unauthorized")
    assert error_of(s.request("GET", "/v1/sessions/nope", token="wrong")) == (401,
                                                                              "unauthorized")
    assert error_of(s.request("POST", "/v1/sessions", data=b"{not json",
                              headers={"Content-Type": "application/json"})) == (
        400, "invalid_request")
    assert error_of(s.request("POST", "/v1/sessions", json={"model": "no-such-model"})) == (
        400, "invalid_request")
    assert error_of(s.request("POST", "/v1/sessions", json={"bogus": 1})) == (
        400, "invalid_request")
    sid = s.create_session()["id"]
    assert error_of(s.request("POST", f"/v1/sessions/{sid}/messages", json={})) == (
        400, "invalid_request")
    assert error_of(s.request("POST", "/v1/sessions/nope/messages", json={"input": "x"})) == (
        404, "not_found")
    assert error_of(s.request("GET", f"/v1/sessions/{sid}/events",
                              params={"limit": 0})) == (400, "invalid_request")
    assert s.request("GET", "/healthz", token=None).status_code == 200
    # The server is still healthy after all of that.
    assert s.send(sid, "still fine")["status"] == "ended"


def test_children_stop_when_the_supervisor_is_killed_alone(tmp_path: Path) -> None:
    import os
    import signal

    from tests.support.server import group_pids
    from tests.support.waiting import wait_for

    server = BrainServer(tmp_path / "data").start()
    try:
        sid = server.create_session()["id"]
        assert server.send(sid, "start the actors")["status"] == "ended"
        pgid = server.proc.pid
        assert len(group_pids(pgid)) > 5
        os.kill(server.proc.pid, signal.SIGKILL)  # the supervisor only, not its group
        server.proc.wait(timeout=10)
        try:
            wait_for(lambda: not group_pids(pgid), timeout=60, interval=0.5,
                     what="gunicorn and the actor system to follow the supervisor")
        except TimeoutError:
            left = {pid: Path(f"/proc/{pid}/cmdline").read_bytes()[:60]
                    for pid in group_pids(pgid)}
            raise AssertionError(f"still running a minute after the supervisor died: {left}"
                                 ) from None
    finally:
        server.kill()
