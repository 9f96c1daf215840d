"""Every command in every phase of the session core, refused ones included; end during creation;
the damaged journal; the release rules. No actor, no disk (tests/sessions/harness.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from brain import errors
from brain.effects import Outcome
from brain.protocol.effects import RunEnvironmentOp
from brain.protocol.messages import (
    CreateSession,
    DeleteSession,
    EndSession,
    IdleTimeout,
    ReleaseMe,
    StartTurn,
)
from brain.protocol.targets import Target
from brain.sessions.state import REGISTRY, Opened, Phase, RemoveFiles, StartActivation
from tests.sessions.harness import (
    COMMANDS,
    ENVIRONMENTS,
    LIMITS,
    Session,
    client_replies,
    config,
    only_reply,
    sent,
)


def closed() -> Session:
    return Session()


def damaged() -> Session:
    session = Session()
    session.damaged()
    return session


def idle() -> Session:
    return Session().created()


def creating() -> Session:
    session = Session().created(environments=ENVIRONMENTS)
    assert session.state.phase is Phase.CREATING
    return session


def running() -> Session:
    return Session().running()


def stopping() -> Session:
    session = Session().running()
    session.command(COMMANDS["cancel"]())
    assert session.state.phase is Phase.STOPPING
    return session


def ending() -> Session:
    session = creating()
    for started in sorted(session.state.environments.waiting):
        session.done(started, result={})
    session.command(EndSession())
    assert session.state.phase is Phase.ENDING
    return session


def ended() -> Session:
    return Session().ended()


def deleting() -> Session:
    session = Session().ended()
    session.command(DeleteSession(), set_up=frozenset({"work", "scratch"}))
    assert session.state.phase is Phase.DELETING
    return session


PHASES: dict[str, Callable[[], Session]] = {
    "closed": closed, "damaged": damaged, "idle": idle, "creating": creating,
    "running": running, "stopping": stopping, "ending": ending, "ended": ended,
    "deleting": deleting,
}

# What each command comes to in each phase: the answer ("view" is the Session, "waits" no
# answer yet, "started" a turn with no answer yet, "sequence" a cancel's, "none" a cancel with no
# turn, "{}" a delete's, or an error code) and the phase after it.
EXPECTED = {
    "closed": {c: ("internal", Phase.CLOSED) for c in COMMANDS},
    "damaged": {**{c: ("session_damaged", Phase.CLOSED) for c in COMMANDS},
                "delete": ("{}", Phase.CLOSED)},
    "idle": {"create": ("invalid_request", Phase.IDLE), "send": ("started", Phase.RUNNING),
             "submit": ("sequence", Phase.RUNNING), "cancel": ("none", Phase.IDLE),
             "end": ("view", Phase.IDLE), "delete": ("session_active", Phase.IDLE),
             "recover": ("view", Phase.IDLE)},
    "creating": {"create": ("invalid_request", Phase.CREATING),
                 "send": ("session_busy", Phase.CREATING),
                 "submit": ("session_busy", Phase.CREATING), "cancel": ("none", Phase.CREATING),
                 "end": ("waits", Phase.CREATING), "delete": ("session_active", Phase.CREATING),
                 "recover": ("view", Phase.CREATING)},
    "running": {"create": ("invalid_request", Phase.RUNNING),
                "send": ("session_busy", Phase.RUNNING),
                "submit": ("session_busy", Phase.RUNNING),
                "cancel": ("sequence", Phase.STOPPING), "end": ("waits", Phase.RUNNING),
                "delete": ("session_active", Phase.RUNNING), "recover": ("view", Phase.RUNNING)},
    "stopping": {"create": ("invalid_request", Phase.STOPPING),
                 "send": ("session_busy", Phase.STOPPING),
                 "submit": ("session_busy", Phase.STOPPING),
                 "cancel": ("sequence", Phase.STOPPING), "end": ("waits", Phase.STOPPING),
                 "delete": ("session_active", Phase.STOPPING),
                 "recover": ("view", Phase.STOPPING)},
    "ending": {"create": ("invalid_request", Phase.ENDING),
               "send": ("session_ended", Phase.ENDING),
               "submit": ("session_ended", Phase.ENDING), "cancel": ("none", Phase.ENDING),
               "end": ("waits", Phase.ENDING), "delete": ("session_active", Phase.ENDING),
               "recover": ("view", Phase.ENDING)},
    "ended": {"create": ("invalid_request", Phase.IDLE), "send": ("session_ended", Phase.IDLE),
              "submit": ("session_ended", Phase.IDLE), "cancel": ("none", Phase.IDLE),
              "end": ("view", Phase.IDLE), "delete": ("{}", Phase.CLOSED),
              "recover": ("view", Phase.IDLE)},
    "deleting": {"create": ("invalid_request", Phase.DELETING),
                 "send": ("session_ended", Phase.DELETING),
                 "submit": ("session_ended", Phase.DELETING),
                 "cancel": ("none", Phase.DELETING), "end": ("view", Phase.DELETING),
                 "delete": ("session_busy", Phase.DELETING),
                 "recover": ("view", Phase.DELETING)},
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("phase", list(PHASES))
def test_every_command_in_every_phase(phase: str, command: str) -> None:
    session = PHASES[phase]()
    before = session.state
    step = session.command(COMMANDS[command]())
    answer, phase_after = EXPECTED[phase][command]
    replies = client_replies(step)
    assert step.state.phase is phase_after
    assert step.state.handled == before.handled + 1  # refused or not, every command counts
    if answer in ("waits", "started"):
        assert replies == []
    else:
        [reply] = replies
        if answer == "view":
            assert reply.error is None and reply.body["id"] == "s-1"
            assert reply.body["status"] == step.state.projection.status
        elif answer == "sequence":
            assert reply.error is None and isinstance(reply.body["sequence"], int)
        elif answer == "none":
            assert reply.error is None and reply.body["sequence"] is None
        elif answer == "{}":
            assert reply.error is None and reply.body == {}
            assert RemoveFiles() in step.actions
        else:
            assert reply.error is not None and reply.error.code == answer, reply
    if answer not in ("waits", "started", "view", "sequence", "{}"):
        # A refusal, or a cancel with no turn, changes nothing and sends no effect.
        assert step.records == ()
        assert all(send.to == REGISTRY for send in step.sends)


def test_a_refusal_from_the_actor_is_answered_and_counted() -> None:
    session = Session()
    step = session.command(StartTurn("hi", "send"), refused=errors.Internal("internal error"))
    assert only_reply(step).error.code == "internal"
    assert step.state.handled == 1
    assert sent(step, ReleaseMe) == [ReleaseMe("s-1", 1)]  # closed: released at once


def test_the_core_refuses_a_missing_session_and_a_second_create_from_the_journals_facts() -> None:
    """The actor only says whether the journal exists; the refusal is the core's."""
    missing = Session().command(StartTurn("hi", "send"), journal=False)
    assert only_reply(missing).error.code == "not_found"
    assert missing.records == () and missing.state.handled == 1
    existing = Session().command(CreateSession(config(), []), journal=True)
    assert only_reply(existing).error.code == "invalid_request"
    assert "already exists" in only_reply(existing).error.message
    assert existing.records == () and sent(existing, ReleaseMe) == [ReleaseMe("s-1", 1)]


def test_a_turn_starts_with_its_records_and_then_its_activation() -> None:
    session = Session().created()
    step = session.command(StartTurn("hello", "submit"))
    assert session.kinds(step) == ["turn_started", "activation_started"]
    turn = step.records[0]["seq"]
    assert only_reply(step).body == {"session_id": "s-1", "sequence": turn}
    [start] = step.actions
    assert isinstance(start, StartActivation) and start.turn == turn
    assert start.payload["input"] == "hello"
    assert start.payload["limits"]["max_model_calls"] == LIMITS.max_model_calls


def test_create_journals_config_and_seeded_transcript_then_sets_up_environments() -> None:
    session = Session()
    session.open()
    seed = [{"role": "user", "content": "earlier"}]
    step = session.command(CreateSession(config(environments=ENVIRONMENTS), seed))
    assert session.kinds(step) == ["session_created", "transcript_changed",
                                   "environment_op_started", "environment_op_started"]
    ops = sent(step, RunEnvironmentOp)
    assert [(op.environment["name"], op.op) for op in ops] == [("work", "setup"),
                                                              ("scratch", "setup")]
    assert all(s.to == Target.ENVIRONMENT_EXECUTOR for s in step.sends)
    assert client_replies(step) == []
    assert step.state.projection.transcript == seed


def test_a_failed_setup_fails_the_session() -> None:
    session = creating()
    first, second = sorted(session.state.environments.waiting)
    session.done(first, Outcome.ERROR, error={"message": "no room"})
    step = session.done(second, result={})
    assert session.kinds(step) == ["environment_op_ended", "session_failed"]
    assert only_reply(step).body["status"] == "failed"
    assert step.records[-1]["error"]["message"] == "setup failed: no room"


def test_end_during_creation_runs_when_setup_is_over() -> None:
    session = creating()
    waiting = sorted(session.state.environments.waiting)
    end = session.command(EndSession())
    assert client_replies(end) == [] and end.records == ()
    session.done(waiting[0], result={})
    step = session.done(waiting[1], result={})
    # The create is answered, then the end begins: session_ending, then detach of both.
    create_reply, = client_replies(step)
    assert create_reply.requester.request_id == "r1" and create_reply.body["status"] == "idle"
    assert session.kinds(step) == ["environment_op_ended", "session_ending",
                                   "environment_op_started", "environment_op_started"]
    assert [op.op for op in sent(step, RunEnvironmentOp)] == ["detach", "detach"]
    assert step.state.phase is Phase.ENDING
    detach = sorted(step.state.environments.waiting)
    session.done(detach[0], Outcome.UNKNOWN, error={"message": "lost"})
    last = session.done(detach[1], result={})
    [end_reply] = client_replies(last)
    assert end_reply.requester.request_id == "r2" and end_reply.body["status"] == "ended"
    assert session.kinds(last) == ["environment_op_ended", "session_ended"]


def test_two_ends_during_a_turn_are_both_answered_when_it_finishes() -> None:
    from brain.sessions.state import ActivationFinished

    session = Session().running()
    session.command(EndSession())
    session.command(EndSession())
    turn = session.state.turn.sequence
    step = session.feed(ActivationFinished(turn, {"status": "completed", "output": "x"}, None))
    assert session.kinds(step) == ["activation_ended", "turn_ended", "session_ending",
                                   "session_ended"]
    ids = [reply.requester.request_id for reply in client_replies(step)]
    assert ids == ["r2", "r3", "r4"]  # the turn's send, then both ends
    assert client_replies(step)[-1].body["status"] == "ended"


def test_teardown_failure_is_refused_and_keeps_the_session() -> None:
    session = deleting()
    first, second = sorted(session.state.environments.waiting)
    session.done(first, result={})
    step = session.done(second, Outcome.TIMEOUT, error={"message": "slow"})
    assert only_reply(step).error.code == "teardown_failed"
    assert RemoveFiles() not in step.actions and step.checkpoint
    assert step.state.phase is Phase.IDLE and step.state.projection is not None


def test_delete_tears_down_only_environments_set_up() -> None:
    session = Session().ended()
    step = session.command(DeleteSession(), set_up=frozenset({"scratch"}))
    assert [op.environment["name"] for op in sent(step, RunEnvironmentOp)] == ["scratch"]
    assert [op.op for op in sent(step, RunEnvironmentOp)] == ["teardown"]


def test_a_damaged_journal_takes_no_write_until_it_opens_clean() -> None:
    session = Session().created()
    on_disk = session.state.projection
    session.damaged()
    for command in ("send", "end", "create", "cancel"):
        step = session.command(COMMANDS[command]())
        assert step.records == () and only_reply(step).error.code == "session_damaged"
    session.feed(Opened(on_disk))  # repaired: the next open passes its CRC pass
    assert only_reply(session.command(COMMANDS["recover"]())).body["status"] == "idle"


# --- release rules --------------------------------------------------------------------------


def releases(step) -> list[ReleaseMe]:
    return sent(step, ReleaseMe)


def test_no_ttl_releases_after_every_answered_command_with_the_count_of_commands() -> None:
    session = Session()
    session.open()
    step = session.command(CreateSession(config(), []))
    assert releases(step) == [ReleaseMe("s-1", 1)]
    step = session.command(StartTurn("hi", "submit"))
    assert releases(step) == []  # a turn is running: not idle
    assert session.command(COMMANDS["recover"]()).sends == ()  # still running


def test_a_ttl_retains_the_session_until_its_latest_timer() -> None:
    session = Session()
    session.open()
    step = session.command(CreateSession(config(idle_ttl_ms=5000), []))
    assert releases(step) == []
    [timer] = step.timers
    assert timer.secs == 5.0 and isinstance(timer.payload, IdleTimeout)
    later = session.command(COMMANDS["recover"]())  # a new command restarts the interval
    [newer] = later.timers
    assert newer.payload.generation == timer.payload.generation + 1
    assert releases(session.feed(timer.payload)) == []  # stale
    assert releases(session.feed(newer.payload)) == [ReleaseMe("s-1", 2)]


def test_a_zero_ttl_retains_the_session_indefinitely() -> None:
    session = Session()
    session.open()
    step = session.command(CreateSession(config(idle_ttl_ms=0), []))
    assert releases(step) == [] and step.timers == ()


def test_the_end_of_a_turn_releases_and_a_delete_releases_the_closed_actor() -> None:
    from brain.sessions.state import ActivationFinished

    session = Session().running()
    turn = session.state.turn.sequence
    step = session.feed(ActivationFinished(turn, {"status": "completed", "output": 1}, None))
    assert releases(step) == [ReleaseMe("s-1", 2)]
    session.command(EndSession())
    step = session.command(DeleteSession())
    assert step.state.phase is Phase.CLOSED and releases(step) == [ReleaseMe("s-1", 4)]


@pytest.mark.parametrize("command", ["send", "end", "delete", "cancel", "recover"])
def test_a_journal_with_no_session_created_takes_only_a_create(command: str) -> None:
    """Found by the property test: an end on an empty journal wrote session_ending into it."""
    session = Session()
    session.open()
    step = session.command(COMMANDS[command]())
    assert step.records == () and only_reply(step).error.code == "not_found"
    assert session.kinds(session.command(COMMANDS["create"]())) == ["session_created"]
