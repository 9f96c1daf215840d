"""What a replay found: one step per guest call, the verdict, and both results.

The JSON form is what `brain replay --json` prints and `POST /v1/sessions/{id}/replays`
answers (docs/replay.md); `lines()` is the same for a terminal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MATCH = "match"
"""The call asked to record exactly what the journal holds next (its time aside)."""
ANSWERED = "answered"
"""The call recorded nothing the first time either (a read, `telemetry.record`, a refused
op): it was answered from the journal as it stood there, with nothing to compare."""
DIVERGED = "diverged"
"""The first call (or the return) that differs from the journal; the replay stops there."""

RETURN_OP = "return"  # the step of the guest's return, after its last call


@dataclass(frozen=True)
class ReplayStep:
    """One guest call of the new loop (or its return, op `return`), in order."""

    call: int  # the guest call's number in the activation, from 1 (the return: calls + 1)
    op: str
    status: str  # MATCH, ANSWERED or DIVERGED
    sequences: tuple[int, ...] = ()  # the journaled records it went past (recorded, outcomes)
    answer: Any = None  # what the guest was told (a returned step: what the guest returned)
    message: str | None = None  # a divergence, in words
    journaled: Any = None  # a divergence: what the journal holds there
    asked: Any = None  # a divergence: what the new loop asked to record (or returned)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"call": self.call, "op": self.op, "status": self.status,
                               "sequences": list(self.sequences)}
        if self.status == DIVERGED:
            out.update(message=self.message, journaled=self.journaled, asked=self.asked)
        else:
            out["answer"] = self.answer
        return out


@dataclass(frozen=True)
class ReplayReport:
    """A turn replayed against an Agentloop: nothing was sent and nothing committed."""

    session_id: str
    turn: int
    activation: int
    agentloop: dict[str, Any]  # what ran: path, sha256
    recorded_agentloop: dict[str, Any]  # the session's own, as recorded: name, sha256
    steps: tuple[ReplayStep, ...]
    journaled_result: dict[str, Any]  # what the turn came to
    returned: dict[str, Any] | None  # what the new loop returned; None when stopped earlier
    journaled_records: int  # records the activation's guest calls committed
    matched_records: int  # how many of them the new loop's calls reached

    @property
    def divergence(self) -> ReplayStep | None:
        return next((s for s in self.steps if s.status == DIVERGED), None)

    @property
    def verdict(self) -> str:
        return MATCH if self.divergence is None else DIVERGED

    def as_json(self) -> dict[str, Any]:
        divergence = self.divergence
        return {
            "session_id": self.session_id,
            "turn": self.turn,
            "activation": self.activation,
            "agentloop": self.agentloop,
            "recorded_agentloop": self.recorded_agentloop,
            "same_module": self.agentloop.get("sha256") == self.recorded_agentloop.get("sha256"),
            "verdict": self.verdict,
            "divergence": None if divergence is None else divergence.as_json(),
            "steps": [step.as_json() for step in self.steps],
            "journaled_result": self.journaled_result,
            "returned": self.returned,
            "journaled_records": self.journaled_records,
            "matched_records": self.matched_records,
        }

    def lines(self) -> list[str]:
        """One line per step, then the verdict; a divergence shows both sides."""
        recorded = self.recorded_agentloop
        out = [f"turn {self.turn} of session {self.session_id} (activation {self.activation}), "
               f"replayed with {self.agentloop.get('path')} "
               f"(sha256 {str(self.agentloop.get('sha256'))[:12]}; the session's Agentloop "
               f"{recorded.get('name')!r} is {str(recorded.get('sha256'))[:12]})"]
        for step in self.steps:
            where = ("  sequence " + ", ".join(map(str, step.sequences))) if step.sequences \
                else ""
            out.append(f"#{step.call:<3} {step.op:<16} {step.status}{where}")
            if step.status == DIVERGED:
                out.append(f"     {step.message}")
                out.append(f"     journal: {_brief(step.journaled)}")
                out.append(f"     asked:   {_brief(step.asked)}")
        divergence = self.divergence
        if divergence is None:
            out.append(f"no divergence: {len(self.steps) - 1} guest calls and the return agree "
                       f"with the journal ({self.matched_records} records)")
        else:
            what = "its return" if divergence.op == RETURN_OP else \
                f"guest call #{divergence.call} ({divergence.op})"
            out.append(f"diverged at {what}, after {self.matched_records} of "
                       f"{self.journaled_records} journaled records matched")
        return out


QUOTED_OUTPUT_CHARS = 200
"""The longest output a divergence message quotes; a longer one is named by its size and the
report field that holds it whole, so the message never ends inside a value."""


def result_text(result: dict[str, Any], field: str) -> str:
    """A turn's result in a divergence message: its output as JSON (as the `journal:` and
    `asked:` lines show values), or its failure's code; `field` is where the report has it."""
    if result.get("status") != "completed":
        return f"failure {json.dumps((result.get('error') or {}).get('code'))}"
    text = _json(result.get("output"))
    if len(text) <= QUOTED_OUTPUT_CHARS:
        return f"output {text}"
    return f"an output of {len(text)} characters of JSON (whole in the report's `{field}`)"


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _brief(value: Any, limit: int = 300) -> str:
    text = "nothing" if value is None else _json(value)
    return text if len(text) <= limit else text[:limit] + "…"
