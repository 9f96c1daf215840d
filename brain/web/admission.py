"""Admission of an async submit without a session actor: commit `turn_started`, answer, then work.

A turn holds its session's actor (a process) until it ends, so when a burst of submits arrives
every actor may be busy, and forking one costs more than the whole admission. The 202 must not
wait for that: its contract is only that `turn_started` is durable. So, for a session no actor
holds, the web worker admits the turn itself:

1. refuse at once (503 `overloaded`) if the registry's backlog is full (the admission board);
2. take the journal's writer lock (the same flock a session actor's writer takes: whoever holds
   it is the session's one writer; if an actor holds it, the submit goes to that actor instead);
3. open the journal and step the pure session core (`core.admit`) on its projection, under the
   limits the session actor applies (brain/session_limits.py), which decides ended, failed and
   busy exactly as an actor would;
4. write the admission marker (brain/admitted.py), commit `turn_started` (one fdatasync),
   release the lock, hint SSE followers, and hand the turn to the registry (`RunAdmitted`,
   repeated until the registry confirms it); an actor then opens the session and runs the
   turn, from the pool or a fork, off the request path.

A session with anything in flight (a turn, a creation, an ending, a crash's leftover) is not
admitted here: the actor path decides those.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from brain import errors
from brain.actors.admission_board import BoardReader
from brain.admitted import admitted_sessions, mark_admitted
from brain.journal import JournalError, JournalLocked, JournalWriter
from brain.live import LivePublisher
from brain.memory_budget import RETRY_AFTER_SECS as MEMORY_RETRY_AFTER_SECS
from brain.memory_budget import MemoryBudget
from brain.protocol.messages import REGISTRY_GLOBAL_NAME, AdmittedTurns, StartTurn
from brain.session_limits import limits_from
from brain.sessions import core
from brain.sessions.carry_out import Mode, carry_out
from brain.sessions.recovery import interrupted_work
from brain.sessions.state import Opened, new_session
from brain.settings import Settings
from brain.web.background import spawn_background
from brain.web.disk_wait import DiskWaitPlacement
from brain.web.gateway import ActorGateway
from brain.web.hand_over import HandOver

log = logging.getLogger(__name__)
CONFIRM_SECS = 10.0  # the registry's answer to a batch; sent again after that
MAX_RETRY_AFTER_SECS = 30


class Admission:
    """One per web worker: admits submits to sessions no actor holds."""

    def __init__(self, settings: Settings, gateway: ActorGateway) -> None:
        self._settings = settings
        self._gateway = gateway
        self._board = BoardReader(settings.data_path)
        self._memory = MemoryBudget(settings.memory_reserve_mb)
        self._live: LivePublisher | None = None
        self._placement = DiskWaitPlacement()  # on the hub, or in gevent's pool (disk_wait.py)
        self._handing_over = HandOver(self._send_to_registry)
        self._runner_started = False
        self._runner_lock = threading.Lock()
        if settings.boot_id:
            spawn_background(self._hand_over_leftovers, "admitted-leftovers")

    def _hand_over_leftovers(self) -> None:
        """A worker that starts hands over the turns of this run still waiting for an actor:
        the worker that admitted one may have died between its 202 and telling the registry
        (gunicorn then starts this one). A turn already running ignores the repeat."""
        assert self._settings.boot_id is not None
        for session_id in admitted_sessions(self._settings.sessions_path,
                                            self._settings.boot_id):
            self._hand_over(session_id)

    def check_capacity(self) -> None:
        """503 `overloaded` when the memory budget is exhausted (brain/memory_budget.py), or
        when the backlog of work waiting for an actor is full (where it is bounded)."""
        if self._memory.exhausted():
            refusal = errors.Overloaded(self._memory.refusal_message())
            refusal.retry_after = MEMORY_RETRY_AFTER_SECS
            raise refusal
        backlog, serving = self._board.read()
        limit = self._settings.admission_backlog
        if limit is not None and backlog >= limit:
            refusal = errors.Overloaded("every session actor is busy and the admission "
                                        "backlog is full; retry after Retry-After")
            # About how many turns' time the backlog takes to drain: a client that waits that
            # long does not come back into the same full backlog.
            refusal.retry_after = min(MAX_RETRY_AFTER_SECS, 1 + backlog // max(serving, 1))
            raise refusal

    def submit(self, session_dir: Path, turn_input: Any, traceparent: str | None = None
               ) -> dict[str, Any] | None:
        """The receipt of a turn admitted here, or None: route the submit to the actor.
        `traceparent` (BRAIN_OTEL): the request's span, which the turn's spans continue."""
        boot_id = self._settings.boot_id
        if not boot_id:
            return None  # no run identity to mark the admission with: the actor path
        self.check_capacity()
        admitted = self._placement.run(self._commit, session_dir, boot_id, turn_input,
                                       traceparent)
        if admitted is None:
            return None
        receipt, sequence = admitted
        self._hint(session_dir.name, sequence)
        self._hand_over(session_dir.name)
        return receipt

    def _commit(self, session_dir: Path, boot_id: str, turn_input: Any,
                traceparent: str | None = None) -> tuple[dict[str, Any], int] | None:
        try:
            writer = JournalWriter.open(session_dir / "journal", project=True,
                                        segment_bytes=self._settings.segment_bytes)
        except JournalLocked:
            return None  # an actor holds the session: it decides
        except JournalError:
            return None  # damaged, or unreadable: the actor path reports it
        try:
            return self._admit(writer, session_dir, boot_id, turn_input, traceparent)
        finally:
            writer.close()

    def _admit(self, writer: JournalWriter, session_dir: Path, boot_id: str,
               turn_input: Any, traceparent: str | None = None
               ) -> tuple[dict[str, Any], int] | None:
        projection, writer.opened = writer.opened, None  # folded in the open's one pass
        if projection is None or projection.config is None or interrupted_work(projection):
            return None  # not created, or work in flight: the actor path decides
        now_ms = time.time_ns() // 1_000_000
        session_id = session_dir.name
        limits = limits_from(self._settings)  # the session actor's own (session_limits.py)
        state = core.step(new_session(session_id, limits), Opened(projection), now_ms).state
        step = core.admit(state, StartTurn(turn_input, "submit"), now_ms)
        [reply] = step.replies
        if reply.error is not None:
            raise reply.error  # ended, failed or busy, as the actor would answer
        [record] = step.records
        carry_out(step, Mode.ADMISSION, _AdmissionHands(self, writer, session_dir, boot_id,
                                                        traceparent))
        return reply.body, record["seq"]

    def _commit_admitted(self, writer: JournalWriter, session_dir: Path, boot_id: str,
                         traceparent: str | None, records: tuple[dict[str, Any], ...]) -> None:
        [record] = records
        # before the commit: see admitted.py
        mark_admitted(session_dir, boot_id, record["seq"], traceparent)
        with self._placement.commit_timed():
            committed = writer.append([record], at=record["at"])
        if committed[-1]["seq"] != record["seq"]:
            raise JournalError(f"the session core numbered {record['seq']}, the journal "
                               f"{committed[-1]['seq']}")

    def _hint(self, session_id: str, sequence: int) -> None:
        if self._live is None:
            self._live = LivePublisher(self._settings.data_path)
        self._live.committed(session_id, sequence)

    def _hand_over(self, session_id: str) -> None:
        """The registry hears of the turn after the 202 is on its way, from one background
        loop per worker (brain/web/hand_over.py): no answer waits for it."""
        with self._runner_lock:
            if not self._runner_started:
                self._runner_started = True
                spawn_background(self._handing_over.run_forever, "admitted-turns")
        self._handing_over.put(session_id)

    def _send_to_registry(self, session_ids: tuple[str, ...]) -> bool:
        """True once the registry confirmed it holds the turns."""
        from brain.actors.registry.actor import Registry

        request_id = f"admitted-{uuid.uuid4().hex}"
        reply = self._gateway.ask_global_reply(REGISTRY_GLOBAL_NAME, Registry,
                                               AdmittedTurns(request_id, session_ids),
                                               request_id, CONFIRM_SECS)
        return reply is not None


class _AdmissionHands:
    """Carrying out an admission's Step (brain/sessions/carry_out.py, `Mode.ADMISSION`): its
    one record committed behind the admission marker; the receipt is the HTTP answer, given
    by the caller; nothing else is in such a Step."""

    def __init__(self, admission: Admission, writer: JournalWriter, session_dir: Path,
                 boot_id: str, traceparent: str | None) -> None:
        self._commit = functools.partial(admission._commit_admitted, writer, session_dir,
                                         boot_id, traceparent)

    def commit(self, records: tuple[dict[str, Any], ...]) -> None:
        self._commit(records)

    def adopt(self, state: Any) -> None:
        pass  # nobody keeps the state: the actor that runs the turn opens the journal

    def answer(self, reply: Any) -> None:
        pass  # the receipt, returned by `_admit`

    def answered(self) -> None:
        pass

    def at_rest(self) -> None:
        pass
