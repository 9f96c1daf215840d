"""The rules every party to a host call shares: ids, bounds, and what a host may answer.

The dispatcher checks a host's answer when it arrives, so that a malformed answer is refused to
the host (400, the call stays open for a corrected answer) instead of being journaled; the
executor then trusts the normalized form it receives.
"""

from __future__ import annotations

from typing import Any

from brain.effects import FAILURES, EffectFailed
from brain.tools.outcome import EventShapeError, check_events

MAX_WAIT_SECS = 30
DEFAULT_WAIT_SECS = 25
MAX_CALLS_PER_POLL = 100
DEFAULT_CALLS_PER_POLL = 16
CANCEL_GRACE_SECS = 5.0
"""How long a host that was told of a cancellation has to answer before the call is `unknown`.
Below the session actor's own 10 s grace, so the executor's verdict arrives before the session
gives up on the effect and records it without the host's answer."""

TOOL_ANSWER_FIELDS = frozenset({"content", "is_error", "events", "outcome"})
TOOL_ANSWER_OUTCOMES = ("ok", "cancelled")


class HostCallFailed(EffectFailed):
    """No usable host answer: `outcome` is what Brain knows (error, cancelled, timeout, unknown)."""


class AnswerShapeError(ValueError):
    """A host answer that is not in the shape its call kind needs."""


def call_id_of(session_id: str, sequence: int) -> str:
    """The call id: the operation's only identifier, `{session_id, sequence}`, in one string."""
    return f"{session_id}-{sequence}"


def check_tool_answer(body: Any) -> dict[str, Any]:
    """`{content, is_error?, events?, outcome?}` → `{content, is_error, events, outcome}`.

    Like an http Tool's answer, `is_error` is the Tool's own verdict and passes to the model.
    `outcome: "cancelled"` says the host stopped because Brain cancelled the call.
    """
    if not isinstance(body, dict):
        raise AnswerShapeError("a tool answer must be an object")
    unknown = set(body) - TOOL_ANSWER_FIELDS
    if unknown:
        raise AnswerShapeError(f"unknown field in a tool answer: {sorted(unknown)[0]}")
    if "content" not in body:
        raise AnswerShapeError("a tool answer needs content")
    is_error = body.get("is_error", False)
    if not isinstance(is_error, bool):
        raise AnswerShapeError("is_error must be a boolean")
    outcome = body.get("outcome", "ok")
    if outcome not in TOOL_ANSWER_OUTCOMES:
        raise AnswerShapeError(f"outcome must be one of {', '.join(TOOL_ANSWER_OUTCOMES)}")
    try:
        events = check_events(body.get("events", []))
    except EventShapeError as exc:
        raise AnswerShapeError(str(exc)) from None
    if outcome == "cancelled":
        is_error = True  # every failure outcome is an error result
    return {"content": body["content"], "is_error": is_error, "events": events,
            "outcome": outcome}


def check_environment_answer(body: Any) -> dict[str, Any]:
    """`{result: {...}}` or `{error: {message, outcome?}}`, normalized (outcome default error)."""
    if not isinstance(body, dict) or len(body) != 1 or not set(body) <= {"result", "error"}:
        raise AnswerShapeError("an environment answer is {result} or {error}")
    if "result" in body:
        if not isinstance(body["result"], dict):
            raise AnswerShapeError("result must be an object")
        return {"result": body["result"]}
    error = body["error"]
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        raise AnswerShapeError("error must be an object with a message")
    unknown = set(error) - {"message", "outcome"}
    if unknown:
        raise AnswerShapeError(f"unknown field in error: {sorted(unknown)[0]}")
    outcome = error.get("outcome", "error")
    if outcome not in FAILURES:
        raise AnswerShapeError(f"error.outcome must be one of {', '.join(FAILURES)}")
    return {"error": {"message": error["message"], "outcome": outcome}}
