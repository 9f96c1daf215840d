"""One past turn's activation as the session's journal holds it, read without writing.

Turns are numbered as the journal and its Events number them: a turn is the sequence of its
`turn_started` record (the `sequence` an async submit answers, the `turn` of the activation
payload, the `started` of `turn_ended`). A turn whose activation was suspended and resumed is
still one activation in the journal (one `activation_started`, one end), and is replayed as one
activation from its start.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from brain.journal import (
    CorruptJournal,
    InvalidRecord,
    JournalScan,
    ProjectionBuilder,
    SessionReader,
)
from brain.journal.damage import Damage
from brain.protocol.records import (
    ACTIVATION_ENDS,
    ACTIVATION_FAILED,
    ACTIVATION_STARTED,
    EXTENSION_EVENT,
    KV_DELETE,
    KV_PUT,
    MODEL_CALL_ENDED,
    MODEL_CALL_FAILED,
    MODEL_CALL_STARTED,
    TOOL_CALL_ENDED,
    TOOL_CALL_FAILED,
    TOOL_CALL_STARTED,
    TRANSCRIPT_CHANGED,
    TURN_ENDED,
    TURN_ENDS,
    TURN_FAILED,
    TURN_STARTED,
)
from brain.replayer.refusal import DAMAGED, INVALID, NOT_FOUND, ReplayRefused
from brain.sessions.replay import ActivationHistory, activation_history

STOP_CODES = frozenset({"cancelled", "turn_timeout"})
GUEST_KINDS = frozenset({
    TRANSCRIPT_CHANGED, KV_PUT, KV_DELETE, EXTENSION_EVENT,
    MODEL_CALL_STARTED, MODEL_CALL_ENDED, MODEL_CALL_FAILED,
    TOOL_CALL_STARTED, TOOL_CALL_ENDED, TOOL_CALL_FAILED,
})
"""What a guest call commits, or the outcome of an effect it asked for: what a replay compares.
Anything else committed during an activation (a cancel's `cancel_requested`, a webhook
delivery's bookkeeping) is folded where it stands and never compared."""


@dataclass(frozen=True)
class TurnOnRecord:
    """A finished turn: its activation's history (the records after `activation_started` up
    to the activation's end) and how the activation and the turn ended."""

    session_id: str
    turn: int
    activation: int
    history: ActivationHistory
    agentloop: dict[str, Any]  # the session's own, as recorded at creation: name, path, sha256
    activation_end: dict[str, Any]
    turn_end: dict[str, Any]

    @property
    def passed_over(self) -> frozenset[str]:
        """The kinds among the activation's records that no guest call asked for."""
        return frozenset(r["kind"] for r in self.history.records) - GUEST_KINDS

    @property
    def stopped(self) -> str | None:
        """`cancelled` or `turn_timeout` for a turn stopped from outside its loop (its end
        is the stop's, not what the loop returned); None otherwise."""
        if self.turn_end["kind"] != TURN_FAILED:
            return None
        code = (self.turn_end.get("error") or {}).get("code")
        return code if code in STOP_CODES else None

    def journaled_result(self) -> dict[str, Any]:
        """What the turn came to, in the shape of an activation's result."""
        if self.stopped is not None:
            return {"status": "failed", "error": self.turn_end.get("error")}
        if self.turn_end["kind"] == TURN_ENDED:
            return {"status": "completed", "output": self.turn_end.get("output")}
        if self.activation_end["kind"] == ACTIVATION_FAILED:
            return {"status": "failed", "error": self.activation_end.get("error")}
        return {"status": "failed", "error": self.turn_end.get("error")}


def load_turn(session_dir: Path, session_id: str, turn: int | None = None) -> TurnOnRecord:
    """The turn `turn` (default: the last finished one); raises ReplayRefused."""
    if not (session_dir / "journal").is_dir():
        raise ReplayRefused(NOT_FOUND, f"no session {session_id} in {session_dir.parent}")
    records = _read(session_dir, session_id)
    starts = [r["seq"] for r in records if r["kind"] == TURN_STARTED]
    ends = {r["started"]: r for r in records if r["kind"] in TURN_ENDS}
    turn = _chosen(session_id, turn, starts, ends)
    activation = next((r for r in records if r["kind"] == ACTIVATION_STARTED
                       and r.get("turn") == turn), None)
    if activation is None:
        raise ReplayRefused(INVALID, f"turn {turn} ran no Agentloop: it ended before its "
                                     "activation started")
    builder = ProjectionBuilder()
    try:
        for record in records:
            if record["seq"] >= turn:
                break
            builder.apply(record)
    except InvalidRecord as exc:
        raise ReplayRefused(DAMAGED, f"session {session_id} is damaged: {exc}") from None
    history = activation_history(builder.build(), [r for r in records if r["seq"] >= turn],
                                 turn, activation["seq"])
    until_end, activation_end = _until_end(history.records, activation["seq"])
    return TurnOnRecord(session_id, turn, activation["seq"], replace(history, records=until_end),
                        dict(history.base.config.get("agentloop") or {}), activation_end,
                        ends[turn])


def _read(session_dir: Path, session_id: str) -> list[dict[str, Any]]:
    """Every record, refused as the server refuses a damaged journal."""
    reader = SessionReader(session_dir)
    refused = reader.damage()
    try:
        if refused is None:
            return [frame.record for frame in JournalScan(session_dir / "journal")]
    except CorruptJournal as exc:
        refused = exc
    where = Damage.of(refused, session_dir.parent.parent).describe()
    raise ReplayRefused(DAMAGED, f"session {session_id} is damaged ({where}); "
                                 "`brain journal verify` says more")


def _chosen(session_id: str, turn: int | None, starts: list[int],
            ends: dict[int, dict[str, Any]]) -> int:
    finished = [s for s in starts if s in ends]
    if turn is None:
        if not finished:
            raise ReplayRefused(INVALID, f"session {session_id} has no finished turn to replay")
        return finished[-1]
    if turn not in starts:
        known = ", ".join(str(s) for s in starts[-10:]) or "none"
        raise ReplayRefused(INVALID, f"turn {turn}: session {session_id} has no turn that "
                                     f"started at sequence {turn} (its last turns: {known})")
    if turn not in ends:
        raise ReplayRefused(INVALID, f"turn {turn} has not finished (it is running or "
                                     "suspended); only a finished turn can be replayed")
    return turn


def _until_end(after_start: tuple[dict[str, Any], ...], activation: int
                    ) -> tuple[tuple[dict[str, Any], ...], dict[str, Any]]:
    """The records before the activation's end, and that end."""
    kept: list[dict[str, Any]] = []
    for record in after_start:
        if record["kind"] in ACTIVATION_ENDS and record.get("started") == activation:
            return tuple(kept), record
        kept.append(record)
    raise ReplayRefused(INVALID, f"the activation at sequence {activation} has no end in the "
                                 "journal")
