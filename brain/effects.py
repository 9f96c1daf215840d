"""What Brain knows about an effect once it is over: one `Outcome`, one failure exception.

A model call, a Tool call and an Environment op are all effects: journaled as `*_started`
before they are sent, sent once, never retried. Each ends in exactly one outcome, the same five
words everywhere (records, messages, the Agentloop's answers, the HTTP API):

- `ok`: an answer arrived (for a Tool, the answer may still say `is_error`);
- `error`: it definitely did not happen, or was refused;
- `cancelled`: Brain asked it to stop and it stopped;
- `timeout`: a deadline expired after it was sent;
- `unknown`: it may have happened; Brain cannot tell, and never replays it.

Every layer that performs an effect (brain/models, brain/tools, brain/environments, the host
calls of brain/host) reports a failure by raising an `EffectFailed` subclass, so a caller reads
`exc.outcome` from a type instead of probing an arbitrary exception for attributes.
"""

from __future__ import annotations

import enum
from typing import Any


class Outcome(enum.StrEnum):
    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    UNKNOWN = "unknown"


FAILURES = (Outcome.ERROR, Outcome.CANCELLED, Outcome.TIMEOUT, Outcome.UNKNOWN)
"""Every outcome but `ok`: what an effect that produced no answer came to."""


def failure(value: Any) -> Outcome:
    """`value` as a failure Outcome; raises ValueError for `ok` or a word outside the five."""
    try:
        outcome = Outcome(value)
    except ValueError:
        raise ValueError(f"outcome must be one of {[str(o) for o in FAILURES]}, "
                         f"not {value!r}") from None
    if outcome is Outcome.OK:
        raise ValueError("a failure cannot have the outcome 'ok'")
    return outcome


class EffectFailed(Exception):
    """An effect that produced no answer. `outcome` is a failure Outcome; `message` is short
    and safe to journal and to show the model (never headers, keys or server paths)."""

    def __init__(self, outcome: Outcome | str, message: str) -> None:
        super().__init__(message)
        self.outcome = failure(outcome)
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        # keep the fields when the error crosses a process boundary (actors pickle)
        return (type(self), (self.outcome.value, self.message))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.outcome.value!r}, {self.message!r})"
