"""The session actor's side of its journal: open it for a command, commit to it (and drop all it
holds when a commit fails), checkpoint it.

Split from the actor (brain/actors/session/actor.py) so that module keeps to carrying out the core's
steps. Everything here runs in the session actor's process, on its one writer.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from brain.actors.session.kept_journal import KeptJournal, take_up
from brain.admitted import admitted_in_this_run, admitted_traceparent, clear_admitted
from brain.damage_report import report_damage
from brain.journal import (
    CorruptJournal,
    JournalError,
    JournalLocked,
    JournalWriter,
    SessionReader,
)
from brain.journal.errors import WriterBroken
from brain.journal.events import is_public, transcript_length_after
from brain.journal.scan import journal_records
from brain.metrics import Latencies, MetricBatch, epoch_ms
from brain.protocol.messages import CreateSession, DeleteSession, Reply
from brain.protocol.records import (
    ENVIRONMENT_OP_ENDED,
    ENVIRONMENT_OP_FAILED,
    MODEL_CALL_ENDED,
    MODEL_CALL_FAILED,
    TOOL_CALL_ENDED,
    TOOL_CALL_FAILED,
    TURN_ENDED,
    TURN_FAILED,
    TURN_STARTED,
)
from brain.sessions import core
from brain.sessions.abandon import waiting_clients
from brain.sessions.environments import set_up_in
from brain.sessions.state import AdmittedTurn, Damaged, Opened, Step
from brain.sessions.views import damage_message

log = logging.getLogger(__name__)
actor_log = logging.getLogger("brain.actors.session.actor")
"""The session actor's own lines (a refused command, a failed commit): docs/operations.md shows
them under this logger."""

LOCK_WAIT_SECS = 5.0
LOCK_RETRY_SECS = 0.002

COMMIT_FAILED = "the session's journal could not be written; nothing more of this was committed"


class CommitFailed(Exception):
    """The journal refused a batch (disk full, failed fdatasync): see `_abandon`."""


class SessionJournal:
    """Mixed into SessionActor, whose `settings`, `writer`, `core`, `metrics`, `live` and
    `session_dir` it uses, and whose step, guest calls and activation it resets when a commit
    fails."""

    settings: Any
    writer: JournalWriter | None
    # the session released here last (brain/actors/session/kept_journal.py)
    kept: KeptJournal | None
    core: Any
    metrics: MetricBatch
    latencies: Latencies
    live: Any
    session_dir: Path
    # brain/actors/session/suspension.py: a resumption's history takes each batch
    note_committed: Any
    # brain/actors/session/suspension.py: what a suspended turn's replay answers from
    open_history: Any
    guest_calls: dict[int, Any]
    stopper: Any
    activation: int
    _void_activations: set[int]
    lease: int
    _reopening: bool
    send: Any
    _step: Any
    _new_core: Any
    _fresh_session_state: Any
    otel_spans: Any

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
        self.latencies.note([{"kind": TURN_STARTED, "seq": sequence,
                              "at": epoch_ms(started["at"])}])
        if self.otel_spans is not None:  # the turn's span continues the submit's trace
            self.otel_spans.admitted_turn(self.core.session_id, sequence,
                                          admitted_traceparent(self.session_dir),
                                          epoch_ms(started["at"]) * 1_000_000)
        return AdmittedTurn(sequence, started["data"]["input"])

    def _open_for(self, command: Any, suspended: Any = None
                  ) -> tuple[bool | None, frozenset[str]]:
        """Open the journal for a command (or, kept open since an earlier one, repeat the CRC
        pass an open makes, so a journal damaged meanwhile takes no write), carrying on the
        session's `suspended` turn if it has one. Returns, when it did not open it, whether the
        journal exists (a create of an existing session, any other command of a missing one:
        the core refuses them, `Command.journal`), and for a delete the Environments owed a
        teardown."""
        journal_dir = self.session_dir / "journal"
        try:
            if self.writer is not None:
                if self.core.idle:
                    self.writer.verify()
            elif isinstance(command, CreateSession) and journal_dir.exists():
                return True, frozenset()
            elif not isinstance(command, CreateSession) and not journal_dir.is_dir():
                return False, frozenset()
            else:
                taken = take_up(self.kept, self.core.session_id) if suspended is None else None
                self.kept = None
                if taken is not None:  # released here last, and nothing wrote since
                    self.writer, opened = taken
                else:
                    self.writer = self._open_writer(
                        journal_dir, suspended.sequence if suspended is not None else None)
                    opened, self.writer.opened = self.writer.opened, None  # folded in the open
                self.open_history(suspended)
                admitted = self._admitted_turn(opened)
                self._step(Opened(opened, admitted, suspended))
                # Counted after the open's own step, which flushes the metrics of a session
                # that stays resident: the count rides with the command's report or release
                # instead of costing a message of its own every open.
                self.metrics.inc("brain_journal_opens_total",
                                 how="recovered" if taken is None else "kept")
                if admitted is not None:  # its activation_started is durable now
                    clear_admitted(self.session_dir)
        except CorruptJournal as exc:
            damage = report_damage(self.settings.data_path, self.core.session_id, exc)
            actor_log.error("session %s damaged, %s refused: %s", self.core.session_id,
                      type(command).__name__, damage.describe())
            self._close_journal()
            self._step(Damaged(damage_message(damage)))
            return None, frozenset()
        if isinstance(command, DeleteSession) and self.writer is not None:
            return None, frozenset(set_up_in(journal_records(journal_dir)))
        return None, frozenset()

    def _close_journal(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.latencies.clear()  # its starts are numbered in this session's journal only

    def _commit(self, records: tuple[dict[str, Any], ...]) -> None:
        """Append one batch (one write, one fdatasync) exactly as the core numbered it."""
        began = time.perf_counter()
        began_ns = time.time_ns()
        try:
            committed = self.writer.append(list(records), at=records[0]["at"])
        except (WriterBroken, OSError) as exc:
            raise CommitFailed(str(exc)) from exc
        self.metrics.observe("brain_journal_commit_seconds", time.perf_counter() - began)
        if committed[-1]["seq"] != records[-1]["seq"] or committed[0]["at"] != records[0]["at"]:
            raise JournalError(f"the session core numbered {records[-1]['seq']}, the journal "
                               f"{committed[-1]['seq']}")
        self.note_committed(committed)
        self.latencies.note(committed)
        for record in committed:
            count_record(self.metrics, record)
            if "started" in record:
                self.latencies.observe(self.metrics, record)
        self.trace_commit(self.core.session_id, [r["seq"] for r in committed])
        if self.otel_spans is not None:
            self.otel_spans.committed(self.core.session_id, committed, began_ns, time.time_ns())
        if has_public_event(committed, self.core.projection):
            self.live.committed(self.core.session_id, committed[-1]["seq"])  # after the fsync

    def _abandon(self, failed: Step, exc: CommitFailed) -> None:
        """A commit failed: nothing of `failed` happened, and nothing this actor holds of the
        session can be trusted (the PostgreSQL fsync lesson: a failed fdatasync is never
        retried and believed). Every waiting client hears `internal`, the guest is stopped,
        timers and late answers of the session are voided, and the session is reopened from
        what is on disk, whose recovery fails the interrupted turn; never its effects again."""
        session_id = self.core.session_id
        actor_log.error("session %s: commit failed (%s); reopening it from disk", session_id, exc)
        for who in waiting_clients(self.core, failed):
            self.send(who.reply_to, Reply(who.request_id, error_code="internal",
                                          error_message=COMMIT_FAILED))
        for call in self.guest_calls.values():
            call.respond({"error": {"code": "internal", "message": COMMIT_FAILED}})
        if self.stopper is not None:  # an activation is running: stopped, and its calls void
            self.stopper.stop()
            self._void_activations.add(self.activation)
        handled = max(self.core.handled, failed.state.handled)
        self._close_journal()
        self._fresh_session_state()
        self.lease += 1  # the abandoned session's timers are void
        self.core = replace(self._new_core(session_id), handled=handled)
        if self._reopening:
            return  # the reopen itself failed: closed until the next command tries again
        self._reopening = True
        try:
            self.writer = self._open_writer(self.session_dir / "journal")
            opened, self.writer.opened = self.writer.opened, None
            self._step(Opened(opened))
        except (JournalError, OSError) as reopen_exc:
            actor_log.error("session %s: reopen failed (%s); the next command tries again",
                      session_id, reopen_exc)
            self._close_journal()
        finally:
            self._reopening = False

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


_EFFECT_TERMINALS = frozenset({MODEL_CALL_ENDED, MODEL_CALL_FAILED, TOOL_CALL_ENDED,
                               TOOL_CALL_FAILED, ENVIRONMENT_OP_ENDED,
                               ENVIRONMENT_OP_FAILED})


def count_record(metrics: MetricBatch, record: dict[str, Any]) -> None:
    kind = record["kind"]
    if kind in _EFFECT_TERMINALS:
        metrics.inc("brain_effects_total", kind=kind.rsplit("_", 1)[0],
                    outcome=record.get("outcome", "unknown"))
    elif kind == TURN_ENDED:
        metrics.inc("brain_turns_total", status="ended", code="")
    elif kind == TURN_FAILED:
        metrics.inc("brain_turns_total", status="failed",
                    code=(record.get("error") or {}).get("code", ""))
