"""A dead executor's effects in the session core (`EffectsLost`): each one still awaited of the
dead executor's kinds ends `unknown`, journaled before the guest or client sees it, and nothing
is sent again; effects of other kinds, and outcomes that came first, are left alone."""

from __future__ import annotations

from brain.effects import Outcome
from brain.protocol.effects import RunModelCall, RunToolCall
from brain.protocol.messages import EffectsLost
from brain.sessions.state import Phase
from tests.sessions.harness import ENVIRONMENTS, Session, guest_answers, only_reply, sent

MESSAGES = [{"role": "user", "content": "hi"}]


def lost(session: Session, *kinds: str, actor: str = "model executor"):
    return session.command(EffectsLost(actor, kinds))


def test_a_model_call_held_by_a_dead_executor_ends_unknown_and_the_guest_sees_it() -> None:
    session = Session().running()
    [run] = sent(session.guest("model.call", messages=MESSAGES), RunModelCall)
    step = lost(session, "model_call")
    [record] = step.records
    assert (record["kind"], record["started"], record["outcome"]) == \
        ("model_call_failed", run.started, "unknown")
    assert "model executor exited" in record["error"]["message"]
    assert step.sends == ()  # never sent again
    [answer] = guest_answers(step).values()
    assert answer["error"]["outcome"] == "unknown"


def test_every_tool_call_of_a_batch_ends_unknown_with_is_error() -> None:
    session = Session().running()
    step = session.guest("tools.call", calls=[{"name": "echo", "id": "a", "input": 1},
                                              {"name": "clock", "id": "b"}])
    first, second = [run.started for run in sent(step, RunToolCall)]
    step = lost(session, "tool_call", actor="tool executor")
    assert [(r["kind"], r["started"], r["outcome"], r["result"]["is_error"])
            for r in step.records] == [("tool_call_failed", first, "unknown", True),
                                       ("tool_call_failed", second, "unknown", True)]
    [answer] = guest_answers(step).values()
    assert [r["outcome"] for r in answer["results"]] == ["unknown", "unknown"]


def test_other_kinds_and_settled_effects_are_left_alone() -> None:
    session = Session().running()
    [run] = sent(session.guest("model.call", messages=MESSAGES), RunModelCall)
    assert lost(session, "tool_call", actor="tool executor").records == ()
    session.done(run.started, Outcome.OK, result={"message": {"role": "assistant",
                                                              "content": "ok"}})
    assert lost(session, "model_call").records == ()  # its outcome came first
    assert lost(Session().created(), "model_call").records == ()  # nothing in flight


def test_environment_ops_of_a_dead_executor_fail_the_creation_they_held() -> None:
    session = Session().created(environments=ENVIRONMENTS)
    assert session.state.phase is Phase.CREATING
    step = lost(session, "environment_op", actor="environment executor")
    kinds = [r["kind"] for r in step.records]
    assert kinds == ["environment_op_failed", "environment_op_failed", "session_failed"]
    assert all(r["outcome"] == "unknown" for r in step.records[:2])
    assert session.state.phase is not Phase.CREATING


def test_the_command_is_counted_so_the_registry_can_release_the_actor() -> None:
    session = Session().running()
    handled = session.state.handled
    lost(session, "model_call")
    assert session.state.handled == handled + 1


def test_a_create_answer_waits_for_nothing_more_after_its_setup_was_lost() -> None:
    session = Session().created(environments=ENVIRONMENTS)
    step = lost(session, "environment_op", actor="environment executor")
    assert only_reply(step).body["status"] == "failed"
