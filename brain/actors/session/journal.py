"""The session actor's side of its journal: open it for a command, commit to it (and drop all it
holds when a commit fails), checkpoint it.

A helper the actor holds as `actor.journal` (brain/actors/session/actor.py), apart so that
module keeps to carrying out the core's steps; the session's state, the writer included, stays
the actor's. Everything here runs in the session actor's process, on its one writer.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from brain.actors.session.kept_journal import take_up
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
from brain.metrics import MetricBatch, epoch_ms
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
    """The journal refused a batch (disk full, failed fdatasync): see `JournalSide.abandon`."""


class JournalSide:
    """The session actor's journal, through its one writer: open it for a command, commit a
    Step's records, abandon the session when a commit fails, checkpoint it at rest, close it.

    Held by the actor (brain/actors/session/actor.py), which keeps the session's state; this
    holds none of it but the guard of an abandon's reopen. It reads the actor's `settings`,
    `session_dir`, `core`, `live` and `otel_spans`; it changes the actor's `writer` (opened and
    closed only here) and `kept` (taken up by an open), and counts each commit in the actor's
    `metrics` and `latencies`. When a commit fails it resets all of the session's state (the
    actor's `_fresh_session_state`, `core`, `lease`), answering the actor's `guest_calls` and
    stopping its activation (`stopper`, `_void_activations`) first. It steps the core through
    the actor's `_step`, and gives each commit to the suspended turn's history
    (`actor.suspension`).
    """

    def __init__(self, actor: Any) -> None:
        self._actor = actor
        self._reopening = False  # an abandon's reopen is running: a failure in it stays closed

    def _open_writer(self, journal_dir: Path, history_from: int | None = None) -> JournalWriter:
        """A web worker admitting a turn holds the lock for a few milliseconds
        (brain/web/admission.py): wait for it, bounded, rather than fail the command.
        `history_from`: a suspended turn's `turn_started` (writer.py, `open`)."""
        deadline = time.monotonic() + LOCK_WAIT_SECS
        while True:
            try:
                return JournalWriter.open(journal_dir, project=True, history_from=history_from,
                                         segment_bytes=self._actor.settings.segment_bytes)
            except JournalLocked:
                if time.monotonic() > deadline:
                    raise
                time.sleep(LOCK_RETRY_SECS)

    def _admitted_turn(self, projection: Any) -> AdmittedTurn | None:
        """The open turn, if a web worker admitted it in this run and nothing of it ran."""
        actor = self._actor
        sequence = projection.open_turn
        if sequence is None or not core.admitted(projection, sequence) \
                or not admitted_in_this_run(actor.session_dir, actor.settings.boot_id, sequence):
            return None
        started = next(SessionReader(actor.session_dir).events_after(sequence - 1))
        actor.latencies.note([{"kind": TURN_STARTED, "seq": sequence,
                               "at": epoch_ms(started["at"])}])
        if actor.otel_spans is not None:  # the turn's span continues the submit's trace
            actor.otel_spans.admitted_turn(actor.core.session_id, sequence,
                                           admitted_traceparent(actor.session_dir),
                                           epoch_ms(started["at"]) * 1_000_000)
        return AdmittedTurn(sequence, started["data"]["input"], started["data"].get("limits"))

    def open_for(self, command: Any, suspended: Any = None
                 ) -> tuple[bool | None, frozenset[str]]:
        """Open the journal for a command (or, kept open since an earlier one, repeat the CRC
        pass an open makes, so a journal damaged meanwhile takes no write), carrying on the
        session's `suspended` turn if it has one. Returns, when it did not open it, whether the
        journal exists (a create of an existing session, any other command of a missing one:
        the core refuses them, `Command.journal`), and for a delete the Environments owed a
        teardown."""
        actor = self._actor
        journal_dir = actor.session_dir / "journal"
        try:
            if actor.writer is not None:
                if actor.core.idle:
                    actor.writer.verify()
            elif isinstance(command, CreateSession) and journal_dir.exists():
                return True, frozenset()
            elif not isinstance(command, CreateSession) and not journal_dir.is_dir():
                return False, frozenset()
            else:
                taken = take_up(actor.kept.pop(actor.core.session_id), actor.core.session_id,
                                suspended)
                timeline = None
                if taken is not None:  # released here last, and nothing wrote since
                    actor.writer, opened, timeline = taken
                else:
                    actor.writer = self._open_writer(
                        journal_dir, suspended.sequence if suspended is not None else None)
                    opened, actor.writer.opened = actor.writer.opened, None  # folded in the open
                actor.suspension.open_history(suspended, timeline)
                admitted = self._admitted_turn(opened)
                actor._step(Opened(opened, admitted, suspended))
                # Counted after the open's own step, which flushes the metrics of a session
                # that stays resident: the count rides with the command's report or release
                # instead of costing a message of its own every open.
                actor.metrics.inc("brain_journal_opens_total",
                                  how="recovered" if taken is None else "kept")
                if admitted is not None:  # its activation_started is durable now
                    clear_admitted(actor.session_dir)
        except CorruptJournal as exc:
            damage = report_damage(actor.settings.data_path, actor.core.session_id, exc)
            actor_log.error("session %s damaged, %s refused: %s", actor.core.session_id,
                      type(command).__name__, damage.describe())
            self.close()
            actor._step(Damaged(damage_message(damage)))
            return None, frozenset()
        if isinstance(command, DeleteSession) and actor.writer is not None:
            return None, frozenset(set_up_in(journal_records(journal_dir)))
        return None, frozenset()

    def close(self) -> None:
        """Close the writer (the lock and descriptors go with it), if one is open."""
        actor = self._actor
        if actor.writer is not None:
            actor.writer.close()
            actor.writer = None
        actor.latencies.clear()  # its starts are numbered in this session's journal only

    def commit(self, records: tuple[dict[str, Any], ...]) -> None:
        """Append one batch (one write, one fdatasync) exactly as the core numbered it."""
        actor = self._actor
        began = time.perf_counter()
        began_ns = time.time_ns()
        try:
            committed = actor.writer.append(list(records), at=records[0]["at"])
        except (WriterBroken, OSError) as exc:
            raise CommitFailed(str(exc)) from exc
        actor.metrics.observe("brain_journal_commit_seconds", time.perf_counter() - began)
        if committed[-1]["seq"] != records[-1]["seq"] or committed[0]["at"] != records[0]["at"]:
            raise JournalError(f"the session core numbered {records[-1]['seq']}, the journal "
                               f"{committed[-1]['seq']}")
        actor.suspension.note_committed(committed)
        actor.latencies.note(committed)
        for record in committed:
            count_record(actor.metrics, record)
            if "started" in record:
                actor.latencies.observe(actor.metrics, record)
        actor.trace_commit(actor.core.session_id, [r["seq"] for r in committed])
        if actor.otel_spans is not None:
            actor.otel_spans.committed(actor.core.session_id, committed, began_ns,
                                       time.time_ns())
        if has_public_event(committed, actor.core.projection):
            actor.live.committed(actor.core.session_id, committed[-1]["seq"])  # after the fsync

    def abandon(self, failed: Step, exc: CommitFailed) -> None:
        """A commit failed: nothing of `failed` happened, and nothing the actor holds of the
        session can be trusted (the PostgreSQL fsync lesson: a failed fdatasync is never
        retried and believed). Every waiting client hears `internal`, the guest is stopped,
        timers and late answers of the session are voided, and the session is reopened from
        what is on disk, whose recovery fails the interrupted turn; never its effects again."""
        actor = self._actor
        session_id = actor.core.session_id
        actor_log.error("session %s: commit failed (%s); reopening it from disk", session_id, exc)
        for who in waiting_clients(actor.core, failed):
            actor.send(who.reply_to, Reply(who.request_id, error_code="internal",
                                           error_message=COMMIT_FAILED))
        for call in actor.guest_calls.values():
            call.respond({"error": {"code": "internal", "message": COMMIT_FAILED}})
        if actor.stopper is not None:  # an activation is running: stopped, and its calls void
            actor.stopper.stop()
            actor._void_activations.add(actor.activation)
        handled = max(actor.core.handled, failed.state.handled)
        self.close()
        actor._fresh_session_state()
        actor.lease += 1  # the abandoned session's timers are void
        actor.core = replace(actor._new_core(session_id), handled=handled)
        if self._reopening:
            return  # the reopen itself failed: closed until the next command tries again
        self._reopening = True
        try:
            actor.writer = self._open_writer(actor.session_dir / "journal")
            opened, actor.writer.opened = actor.writer.opened, None
            actor._step(Opened(opened))
        except (JournalError, OSError) as reopen_exc:
            actor_log.error("session %s: reopen failed (%s); the next command tries again",
                      session_id, reopen_exc)
            self.close()
        finally:
            self._reopening = False

    def checkpoint(self) -> None:
        """At a moment of rest (a turn ended, a session created, ended, recovered): write the
        checkpoint when enough was committed since the last one, and always for a session
        that has settled (ended or failed: its tail would otherwise be replayed by every read
        from now on). Not on every turn, nor on release, which under the default policy
        follows every turn (docs/decisions.md, "Per-turn cost of a released session's turn")."""
        actor = self._actor
        writer, projection = actor.writer, actor.core.projection
        if writer is None or projection is None:
            return
        settled = projection.status in core.SETTLED
        if not (writer.checkpoint_due or (settled and writer.records_since_checkpoint)):
            return
        try:
            writer.write_checkpoint(actor.core.projection)
        except Exception:
            log.exception("session %s: checkpoint not written (the journal stays canonical)",
                          actor.core.session_id)


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
