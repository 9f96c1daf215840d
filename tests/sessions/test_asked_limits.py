"""Lower limits asked by a create or a message body: checked against the ceiling, recorded,
and applied as the tightest of the deployment's, the session's and the turn's."""

from __future__ import annotations

import pytest

from brain.errors import InvalidRequest
from brain.sessions.asked_limits import (
    check_asked,
    effective_limits,
    session_ceiling,
    session_limits,
)
from brain.sessions.state import Limits

DEPLOYMENT = Limits(max_model_calls=128, max_turn_secs=1800, max_tool_secs=300)


def test_a_session_records_what_it_asked_for_and_the_deployment_s_other_limit() -> None:
    assert session_limits({"max_turn_secs": 30}, DEPLOYMENT) == {"max_turn_secs": 30,
                                                                 "max_model_calls": 128}
    assert session_limits(None, DEPLOYMENT) == {"max_turn_secs": 1800, "max_model_calls": 128}
    assert session_limits({"max_model_calls": None}, DEPLOYMENT)["max_model_calls"] == 128


@pytest.mark.parametrize("asked, words", [
    ({"max_turn_secs": 1801}, "limits.max_turn_secs: 1801 is above this server's limit of 1800 "
                              "(BRAIN_MAX_TURN_SECS)"),
    ({"max_model_calls": 129}, "limits.max_model_calls: 129 is above this server's limit of 128"),
    ({"max_turn_secs": 0}, "limits.max_turn_secs: expected a positive integer"),
    ({"max_turn_secs": True}, "limits.max_turn_secs: expected a positive integer"),
    ({"max_turn_secs": 2.5}, "limits.max_turn_secs: expected a positive integer"),
    ({"max_tool_secs": 5}, "limits.max_tool_secs: unknown limit"),
    ([30], "limits: expected object"),
])
def test_asking_for_more_or_for_nonsense_is_refused_by_name(asked: object, words: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        session_limits(asked, DEPLOYMENT)
    assert words in str(refused.value)


def test_a_deployment_without_a_bound_lets_a_session_ask_for_any() -> None:
    unbounded = Limits(max_model_calls=0, max_turn_secs=0)
    assert session_limits({"max_turn_secs": 10**6}, unbounded)["max_turn_secs"] == 10**6
    assert effective_limits(unbounded, None, None).max_turn_secs == 0


def test_a_turn_runs_under_the_tightest_of_the_three() -> None:
    config = {"limits": {"max_turn_secs": 30, "max_model_calls": 128}}
    limits = effective_limits(DEPLOYMENT, config, {"max_model_calls": 3})
    assert (limits.max_turn_secs, limits.max_model_calls) == (30, 3)
    assert limits.max_tool_secs == 300  # what no one may ask for stays the deployment's
    lowered = Limits(max_model_calls=2, max_turn_secs=10)  # the operator lowered them since
    assert effective_limits(lowered, config, None).max_turn_secs == 10
    raised = Limits(max_model_calls=500, max_turn_secs=3600)  # or raised them
    assert effective_limits(raised, config, None).max_turn_secs == 30
    assert effective_limits(DEPLOYMENT, {}, None) == DEPLOYMENT  # a session from before limits


def test_a_turn_may_not_ask_above_its_session() -> None:
    ceiling = session_ceiling({"limits": {"max_turn_secs": 30, "max_model_calls": 5}},
                              DEPLOYMENT)
    assert check_asked({"max_model_calls": 5}, ceiling, "the session's") == {"max_model_calls": 5}
    with pytest.raises(InvalidRequest) as refused:
        check_asked({"max_model_calls": 6}, ceiling, "the session's")
    assert "6 is above the session's limit of 5" in str(refused.value)
