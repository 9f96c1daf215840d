"""The session actor's side of its journal: open it, commit to it, checkpoint it.

Split from the actor (brain/actors/session.py) so that module keeps to carrying out the core's
steps. Everything here runs in the session actor's process, on its one writer.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from brain.admitted import admitted_in_this_run
from brain.journal import JournalError, JournalLocked, JournalWriter, SessionReader
from brain.journal.errors import WriterBroken
from brain.journal.events import is_public, transcript_length_after
from brain.metrics import MetricBatch
from brain.sessions import core
from brain.sessions.state import AdmittedTurn

log = logging.getLogger(__name__)

LOCK_WAIT_SECS = 5.0
LOCK_RETRY_SECS = 0.002

COMMIT_FAILED = "the session's journal could not be written; nothing more of this was committed"


class CommitFailed(Exception):
    """The journal refused a batch (disk full, failed fdatasync): see `_abandon`."""


class SessionJournal:
    """Mixed into SessionActor, whose `settings`, `writer`, `core`, `metrics`, `live` and
    `session_dir` it uses."""

    settings: Any
    writer: JournalWriter | None
    core: Any
    metrics: MetricBatch
    live: Any
    session_dir: Path
    note_committed: Any  # session_suspension.py: a resumption's history takes each batch

    def _open_writer(self, journal_dir: Path, history_from: int | None = None) -> JournalWriter:
        """A web worker admitting a turn holds the lock for a few milliseconds
        (brain/web/admission.py): wait for it, bounded, rather than fail the command.
        `history_from`: a suspended turn's `turn_started` (writer.py, `open`)."""
        deadline = time.monotonic() + LOCK_WAIT_SECS
        while True:
            try:
                return JournalWriter.open(journal_dir, project=True, history_from=history_from,
                                         segment_bytes=self.settings.segment_bytes)
            except JournalLocked:
                if time.monotonic() > deadline:
                    raise
                time.sleep(LOCK_RETRY_SECS)

    def _admitted_turn(self, projection: Any) -> AdmittedTurn | None:
        """The open turn, if a web worker admitted it in this run and nothing of it ran."""
        sequence = projection.open_turn
        if sequence is None or not core.admitted(projection, sequence) \
                or not admitted_in_this_run(self.session_dir, self.settings.boot_id, sequence):
            return None
        started = next(SessionReader(self.session_dir).events_after(sequence - 1))
        return AdmittedTurn(sequence, started["data"]["input"])

    def _close_journal(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def _commit(self, records: tuple[dict[str, Any], ...]) -> None:
        """Append one batch (one write, one fdatasync) exactly as the core numbered it."""
        began = time.perf_counter()
        try:
            committed = self.writer.append(list(records), at=records[0]["at"])
        except (WriterBroken, OSError) as exc:
            raise CommitFailed(str(exc)) from exc
        self.metrics.observe("brain_journal_commit_seconds", time.perf_counter() - began)
        if committed[-1]["seq"] != records[-1]["seq"] or committed[0]["at"] != records[0]["at"]:
            raise JournalError(f"the session core numbered {records[-1]['seq']}, the journal "
                               f"{committed[-1]['seq']}")
        self.note_committed(committed)
        for record in committed:
            count_record(self.metrics, record)
        self.trace_commit(self.core.session_id, [r["seq"] for r in committed])
        if has_public_event(committed, self.core.projection):
            self.live.committed(self.core.session_id, committed[-1]["seq"])  # after the fsync

    def _checkpoint(self) -> None:
        """At a moment of rest (a turn ended, a session created, ended, recovered): write the
        checkpoint when enough was committed since the last one, and always for a session
        that has settled (ended or failed: its tail would otherwise be replayed by every read
        from now on). Not on every turn, nor on release, which under the default policy
        follows every turn (docs/decisions.md, "Per-turn cost of a released session's turn")."""
        writer, projection = self.writer, self.core.projection
        if writer is None or projection is None:
            return
        settled = projection.status in core.SETTLED
        if not (writer.checkpoint_due or (settled and writer.records_since_checkpoint)):
            return
        try:
            writer.write_checkpoint(self.core.projection)
        except Exception:
            log.exception("session %s: checkpoint not written (the journal stays canonical)",
                          self.core.session_id)

def has_public_event(records: list[dict[str, Any]], before: Any) -> bool:
    """Whether a committed batch holds an Event. Live hints exist for SSE followers, which
    deliver only Events: a batch of private records (a plain transcript append, kv) would wake
    every web worker for nothing (a tool turn commits six such batches). The projection is the
    one before the batch; a follower that missed a hint re-reads at its next keep-alive."""
    length = len(before.transcript) if before is not None else 0
    for record in records:
        if is_public(record, length):
            return True
        length = transcript_length_after(record, length)
    return False


_EFFECT_TERMINALS = frozenset({"model_call_ended", "model_call_failed", "tool_call_ended",
                               "tool_call_failed", "environment_op_ended",
                               "environment_op_failed"})


def count_record(metrics: MetricBatch, record: dict[str, Any]) -> None:
    kind = record["kind"]
    if kind in _EFFECT_TERMINALS:
        metrics.inc("brain_effects_total", kind=kind.rsplit("_", 1)[0],
                    outcome=record.get("outcome", "unknown"))
    elif kind == "turn_ended":
        metrics.inc("brain_turns_total", status="ended", code="")
    elif kind == "turn_failed":
        metrics.inc("brain_turns_total", status="failed",
                    code=(record.get("error") or {}).get("code", ""))
