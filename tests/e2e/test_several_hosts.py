"""Several hosts as one Brain: two `brain serve` members of one Thespian convention.

Each member has its own data dir, its own loopback address (127.0.0.2 and 127.0.0.3, standing
for two hosts on a private network) and its own process group. Sessions created through one
front end are spread over both data dirs; any front end serves any session; a SIGKILLed member's
sessions answer 503 `unavailable` while the other's keep serving, and serve again, with nothing
lost, once it is back. Every listening socket of a member is on that member's address.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brain.actors.roster import JOIN_WAIT_SECS
from brain.processes import listening_sockets
from tests.support.convention import MemberServer, knows
from tests.support.server import group_pids
from tests.support.sse import SseClient
from tests.support.waiting import wait_for

# The convention's behaviour is the network's and Thespian's, not the interpreter's, as in
# test_several_hosts_netns.py: CI runs it on its main Python only.
pytestmark = pytest.mark.slow_e2e

LEADER_HOST, MEMBER_HOST = "127.0.0.2", "127.0.0.3"
SESSIONS = 6  # sequential creates: at least one worker takes 3 of them, alternating members


@pytest.fixture
def convention(tmp_path: Path):
    leader = MemberServer(tmp_path, "a", LEADER_HOST)
    member = MemberServer(tmp_path, "b", MEMBER_HOST, leader)
    try:
        leader.start()
        member.start()
        wait_for(lambda: knows(leader, "b") and knows(member, "a"), timeout=30,
                 what="each member forwarding to the other")
        yield leader, member
    finally:
        member.kill()
        leader.kill()


def assert_unavailable(resp) -> None:
    assert resp.status_code == 503, resp.text
    error = resp.json()["error"]
    assert error["code"] == "unavailable", error
    assert error["message"] and error["request_id"].startswith("req_"), error
    assert int(resp.headers["Retry-After"]) > 0


def create_spread(front: MemberServer, count: int = SESSIONS) -> list[str]:
    return [front.create_session()["id"] for _ in range(count)]


def test_sessions_spread_over_members_and_every_front_end_serves_every_session(
        convention: tuple[MemberServer, MemberServer]) -> None:
    leader, member = convention
    ids = create_spread(leader)
    on_a = {sid for sid in ids if sid.endswith("-a")}
    on_b = {sid for sid in ids if sid.endswith("-b")}
    assert on_a and on_b and on_a | on_b == set(ids), ids
    assert leader.sessions_on_disk() == on_a
    assert member.sessions_on_disk() == on_b

    for sid in ids:
        # Sent through the front end of the member that does NOT hold it, and read from both.
        other = member if sid in on_a else leader
        assert other.send(sid, f"hello {sid}")["status"] == "ended"
        assert leader.events(sid) == member.events(sid)
        transcript = leader.request("GET", f"/v1/sessions/{sid}/transcript").json()
        assert transcript == member.request("GET", f"/v1/sessions/{sid}/transcript").json()
        assert any(f"hello {sid}" in json.dumps(m) for m in transcript["messages"])
        status = other.request("GET", f"/v1/sessions/{sid}").json()
        assert status["id"] == sid and status["status"] == "idle", status

    # A live stream through the front end that does not hold the session.
    remote = sorted(on_b)[0]
    stream = SseClient(leader.host, leader.port, f"/v1/sessions/{remote}/events", leader.token,
                       params={"after": 0})
    try:
        assert stream.status == 200
        frames = stream.events(len(member.events(remote)), timeout=30)
        assert [int(f.id) for f in frames] == [e["sequence"] for e in member.events(remote)]
    finally:
        stream.close()

    # A session of a member nobody has heard of: unavailable, in the contract's error shape.
    assert_unavailable(leader.request("GET", "/v1/sessions/0000-nobody"))

    # The actor ports (admin, registry, sessions, executors) and HTTP stay on each member's
    # own address: nothing listens on all interfaces, nor on the other member's address.
    for server in (leader, member):
        assert server.proc is not None
        sockets = listening_sockets(group_pids(server.proc.pid))
        assert len({port for _, _, port in sockets}) > 3, sockets
        assert {address for _, address, _ in sockets} == {server.host}, sockets


def test_a_killed_member_answers_unavailable_until_it_rejoins_with_nothing_lost(
        convention: tuple[MemberServer, MemberServer]) -> None:
    leader, member = convention
    ids = create_spread(leader)
    for sid in ids:
        assert leader.send(sid, "before")["status"] == "ended"
    on_b = [sid for sid in ids if sid.endswith("-b")]
    on_a = [sid for sid in ids if sid.endswith("-a")]
    before = {sid: member.events(sid) for sid in on_b}

    member.kill()  # SIGKILL of its whole process group

    for sid in on_a:
        assert leader.send(sid, "still here")["status"] == "ended"
        assert leader.events(sid)[-1]["kind"] == "turn_ended"
    for sid in on_b:
        assert_unavailable(leader.request("GET", f"/v1/sessions/{sid}"))
        assert_unavailable(leader.request("GET", f"/v1/sessions/{sid}/events"))
        assert_unavailable(leader.request("POST", f"/v1/sessions/{sid}/messages",
                                          json={"input": "lost?"}))
    # New sessions go to the members that are up.
    assert all(sid.endswith("-a") for sid in create_spread(leader, 3))

    member.start()
    wait_for(lambda: knows(leader, "b"), timeout=60, what="the member back in the convention")
    for sid in on_b:
        assert leader.events(sid) == before[sid]  # nothing lost, nothing added
        assert leader.send(sid, "after")["status"] == "ended"
        assert member.events(sid)[:len(before[sid])] == before[sid]
    assert any(sid.endswith("-b") for sid in create_spread(leader))


def test_the_leaders_death_leaves_the_other_member_serving_until_the_leader_is_back(
        convention: tuple[MemberServer, MemberServer]) -> None:
    leader, member = convention
    ids = create_spread(member)
    on_a = [sid for sid in ids if sid.endswith("-a")]
    on_b = [sid for sid in ids if sid.endswith("-b")]
    assert on_a and on_b, ids
    before = {sid: leader.events(sid) for sid in on_a}

    leader.kill()

    for sid in on_b:
        assert member.send(sid, "without the leader")["status"] == "ended"
    for sid in on_a:
        assert_unavailable(member.request("GET", f"/v1/sessions/{sid}/transcript"))
    assert all(sid.endswith("-b") for sid in create_spread(member, 3))

    leader.start()  # members check in every 10 s, so the new leader learns of them again
    wait_for(lambda: knows(member, "a") and knows(leader, "b"), timeout=60,
             what="the convention formed again around the restarted leader")
    for sid in on_a:
        assert member.events(sid) == before[sid]
        assert member.send(sid, "leader back")["status"] == "ended"
    assert any(sid.endswith("-a") for sid in create_spread(member))


def test_three_members_know_each_other_through_the_leader(tmp_path: Path) -> None:
    """Thespian tells a member only about the leader; the leader's roster tells the rest."""
    leader = MemberServer(tmp_path, "a", LEADER_HOST)
    members = [leader, MemberServer(tmp_path, "b", MEMBER_HOST, leader),
               MemberServer(tmp_path, "c", "127.0.0.4", leader)]
    try:
        for server in members:
            server.start()
        wait_for(lambda: all(knows(s, o.name) for s in members for o in members if o is not s),
                 timeout=30, what="every member forwarding to every other")
        ids = create_spread(members[1])  # through a member that is not the leader
        assert {sid.rsplit("-", 1)[1] for sid in ids} == {"a", "b", "c"}, ids
        for server in members:
            assert server.sessions_on_disk() == {sid for sid in ids
                                                 if sid.endswith(f"-{server.name}")}
        for sid in ids:
            assert members[2].send(sid, "from c")["status"] == "ended"
            assert members[1].events(sid) == members[2].events(sid)
    finally:
        for server in reversed(members):
            server.kill()


def test_a_member_with_another_actor_secret_is_never_let_in(tmp_path: Path) -> None:
    """Every frame is signed with the actor secret (brain/actors/thespian/auth.py): a server
    that names the convention but holds another secret has its frames dropped unread."""
    leader = MemberServer(tmp_path, "a", LEADER_HOST)
    stranger = MemberServer(tmp_path, "b", MEMBER_HOST, leader)
    own_secret = tmp_path / "b" / "own.secret"
    own_secret.write_bytes(bytes(32))
    own_secret.chmod(0o600)
    stranger.extra_env["BRAIN_ACTOR_SECRET_FILE"] = str(own_secret)
    try:
        leader.start()
        stranger.start()
        # (from 127.0.0.1: on loopback the kernel picks that source address whatever the bind)
        wait_for(lambda: "dropped a message from 127.0.0.1 unread" in
                 leader.log_path.read_text(errors="replace"),
                 timeout=30, what="the leader dropping the stranger's frames")
        assert not knows(leader, "b") and not knows(stranger, "a")
        sid = leader.create_session()["id"]
        assert sid.endswith("-a")  # never placed on the stranger
        assert leader.send(sid, "alone")["status"] == "ended"
        # The stranger itself says once, at error level, why it is not in (JOIN_WAIT_SECS).
        refused = "this member has not joined the convention at"
        wait_for(lambda: refused in stranger.log_path.read_text(errors="replace"),
                 timeout=JOIN_WAIT_SECS + 20, what="the stranger saying it was not admitted")
        line = next(line for line in stranger.log_path.read_text(errors="replace").splitlines()
                    if refused in line)
        assert "ERROR" in line and "BRAIN_ACTOR_SECRET_FILE" in line, line
    finally:
        stranger.kill()
        leader.kill()
