"""The one value every Tool call produces, whatever its route.

The session journals a `ToolOutcome` as `tool_call_ended` (outcome `ok`) or `tool_call_failed`
(any other outcome; the words are brain.effects.Outcome) and hands `{content, is_error,
outcome}` to the Agentloop. Keeping the rules in the value itself (every failure is an error
result; events have the journal's shape) means no route can produce a record the journal would
have to second-guess.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from brain.effects import Outcome, failure


class EventShapeError(ValueError):
    """Tool-requested events that are not a list of `{kind, data}` objects."""


@dataclass(frozen=True)
class ToolOutcome:
    """What one Tool call came to.

    `content` is any JSON value (for failures, a short message safe to show the model);
    `is_error` is what the model is told; `outcome` is what Brain knows about the effect:
    `ok` (an answer arrived), `error` (it definitely did not happen or was refused),
    `cancelled`, `timeout`, `unknown` (it may have happened; never replayed). `events` are
    extension Events the tool asked to emit; only their shape is checked here.
    """

    content: Any
    is_error: bool
    outcome: Outcome = Outcome.OK
    events: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", Outcome(self.outcome))  # ValueError if not one
        if not isinstance(self.is_error, bool):
            raise ValueError("is_error must be a bool")
        if self.outcome is not Outcome.OK and not self.is_error:
            raise ValueError("every failure outcome is an error result")
        object.__setattr__(self, "events", check_events(self.events))

    @classmethod
    def ok(cls, content: Any, *, is_error: bool = False, events: Any = ()) -> ToolOutcome:
        """An answer arrived; `is_error` is passed through from whoever answered."""
        return cls(content=content, is_error=is_error, outcome=Outcome.OK, events=events)

    @classmethod
    def failed(cls, outcome: Outcome | str, message: str) -> ToolOutcome:
        """A failure outcome whose content is a short message for the model."""
        return cls(content=message, is_error=True, outcome=failure(outcome), events=[])

    def to_dict(self) -> dict[str, Any]:
        """A plain copy for messages and journal records; mutating it cannot alter this value."""
        return {
            "content": copy.deepcopy(self.content),
            "is_error": self.is_error,
            "outcome": self.outcome.value,
            "events": copy.deepcopy(self.events),
        }


def check_events(events: Any) -> list[dict[str, Any]]:
    """Return `events` as a fresh list of `{kind, data}` dicts, or raise EventShapeError.

    Shape only: a non-empty string `kind` and a `data` key (any JSON value), nothing else.
    Whether a kind is reserved and whether the turn's emit budget allows it is the session's
    decision, made where the journal is.
    """
    if not isinstance(events, list | tuple):
        raise EventShapeError("events must be a list")
    checked = []
    for index, event in enumerate(events):
        if not isinstance(event, dict) or set(event) != {"kind", "data"}:
            raise EventShapeError(f"events[{index}] must be an object with kind and data")
        kind = event["kind"]
        if not isinstance(kind, str) or not kind:
            raise EventShapeError(f"events[{index}].kind must be a non-empty string")
        checked.append({"kind": kind, "data": event["data"]})
    return checked
