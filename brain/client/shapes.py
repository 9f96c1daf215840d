"""The contract's answer shapes as small immutable objects.

Attribute access catches typos that dict lookups hide, and freezing them makes clear that they
are snapshots of what the server said at one moment, not live views. Every object keeps the
decoded JSON in `raw` so fields added to the contract later are not lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from brain.client.errors import ProtocolError


def _require(body: Any, key: str) -> Any:
    if not isinstance(body, dict) or key not in body:
        raise ProtocolError(f"answer lacks {key!r}: {str(body)[:200]}")
    return body[key]


@dataclass(frozen=True)
class Origin:
    """Who emitted an extension Event: `kind` agentloop or tool, and that execution's record."""

    kind: str
    sequence: int

    @classmethod
    def from_json(cls, body: Any) -> Origin | None:
        if not isinstance(body, dict):
            return None
        return cls(kind=body.get("kind", ""), sequence=body.get("sequence", 0))


@dataclass(frozen=True)
class Event:
    """A committed public journal record: its payload is `data`, its provenance `origin`."""

    sequence: int
    kind: str
    at: str | None
    data: dict[str, Any]
    origin: Origin | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, body: Any) -> Event:
        sequence = _require(body, "sequence")
        if not isinstance(sequence, int):
            raise ProtocolError(f"event sequence is not an integer: {sequence!r}")
        data = body.get("data")
        return cls(sequence=sequence, kind=_require(body, "kind"), at=body.get("at"),
                   data=data if isinstance(data, dict) else {},
                   origin=Origin.from_json(body.get("origin")), raw=body)


@dataclass(frozen=True)
class ModelDelta:
    """A live model token delta from a stream. Not durable, so it has no sequence.

    `started` is the sequence of the model_call_started record the delta belongs to; the
    committed model_call_ended carries the complete result.
    """

    started: int | None
    delta: str


@dataclass(frozen=True)
class EventPage:
    """One finite page of Events; continue after `next_after` while `has_more`."""

    events: list[Event]
    next_after: int
    has_more: bool

    @classmethod
    def from_json(cls, body: Any) -> EventPage:
        events = [Event.from_json(e) for e in _require(body, "events")]
        return cls(events=events, next_after=_require(body, "next_after"),
                   has_more=bool(_require(body, "has_more")))


@dataclass(frozen=True)
class TurnError:
    """Why a turn failed: an API code or a turn code such as `cancelled` or `turn_timeout`."""

    code: str
    message: str

    @classmethod
    def from_json(cls, body: Any) -> TurnError | None:
        if not isinstance(body, dict):
            return None
        return cls(code=str(body.get("code", "")), message=str(body.get("message", "")))


@dataclass(frozen=True)
class TurnResult:
    """The answer of a synchronous send; `sequence` names the turn's turn_started record.

    A failed turn is a result, not an exception: the server answered 200 with `status` failed.
    `cancel_request` is set when a send under a CancelSignal issued a cancel: its answer.
    """

    session_id: str
    sequence: int
    status: str
    output: Any = None
    error: TurnError | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    cancel_request: CancelAnswer | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ended"

    @property
    def cancelled(self) -> bool:
        return self.error is not None and self.error.code == "cancelled"

    @classmethod
    def from_json(cls, body: Any) -> TurnResult:
        return cls(session_id=_require(body, "session_id"), sequence=_require(body, "sequence"),
                   status=_require(body, "status"), output=body.get("output"),
                   error=TurnError.from_json(body.get("error")), raw=body)


@dataclass(frozen=True)
class Receipt:
    """Proof that an async submission's turn_started record is durable."""

    session_id: str
    sequence: int

    @classmethod
    def from_json(cls, body: Any) -> Receipt:
        return cls(session_id=_require(body, "session_id"), sequence=_require(body, "sequence"))


@dataclass(frozen=True)
class CancelAnswer:
    """The answer to a cancel: `sequence` is the cancel_requested record, None when idle."""

    session_id: str
    sequence: int | None

    @property
    def requested(self) -> bool:
        return self.sequence is not None

    @classmethod
    def from_json(cls, body: Any) -> CancelAnswer:
        return cls(session_id=_require(body, "session_id"), sequence=_require(body, "sequence"))


@dataclass(frozen=True)
class Transcript:
    """The canonical messages as of journal record `through_sequence`."""

    messages: list[dict[str, Any]]
    through_sequence: int

    @classmethod
    def from_json(cls, body: Any) -> Transcript:
        return cls(messages=_require(body, "messages"),
                   through_sequence=_require(body, "through_sequence"))


@dataclass(frozen=True)
class TurnState:
    """The session's latest turn as the Session shape reports it."""

    sequence: int
    status: str
    error: TurnError | None = None

    @classmethod
    def from_json(cls, body: Any) -> TurnState | None:
        if not isinstance(body, dict) or not isinstance(body.get("sequence"), int):
            return None
        return cls(sequence=body["sequence"], status=str(body.get("status", "")),
                   error=TurnError.from_json(body.get("error")))
