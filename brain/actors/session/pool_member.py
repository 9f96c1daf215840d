"""The session actor as a member of the registry's pool: warmed before any session, and left
clean after each.

Apart from the actor (brain/actors/session/actor.py), which carries out one session's steps, because
this is the process's life across sessions: the registry forks session actors ahead of need and
hands each a session, then the next. Here the actor warms the Agentloop runtime while pooled,
lets go of a session when the idle rule says so (nothing of it stays resident: reads never need
this actor), and tells the registry it did, at once or a little later
(brain/actors/registry/release_report.py).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from brain.actors.registry.admission_board import BoardReader
from brain.actors.registry.release_report import ReleaseReports
from brain.actors.session.activation import agentloop_runtime
from brain.actors.session.kept_journal import keep
from brain.actors.thespian.proctitle import rename_actor_process
from brain.metrics import MetricBatch
from brain.protocol.messages import ReleaseMe, ReportRelease, Warmed, WarmUp

log = logging.getLogger("brain.actors.session.actor")  # the actor's own lines, under its name

POOLED_ROLE = "pooled session"


class PooledSession:
    """Mixed into SessionActor, whose settings, core, registry, metrics and release reports it
    uses, and whose journal and suspended history it drops."""

    settings: Any
    core: Any
    writer: Any
    kept: Any  # brain/actors/session/kept_journal.py
    registry: Any
    metrics: MetricBatch
    lease: int
    _reports: ReleaseReports
    _board: BoardReader
    send: Any
    wakeupAfter: Any
    suspended_release: Any  # brain/actors/session/suspension.py
    forget_history: Any  # brain/actors/session/suspension.py
    _close_journal: Any  # brain/actors/session/journal.py
    _flush_metrics: Any
    _fresh_session_state: Any

    def receiveMsg_WarmUp(self, msg: WarmUp, sender: Any) -> None:
        """Make the Agentloop runtime and load the configured modules now, in the pool.

        This process is a fork of the registry, which never made an Engine, so building one
        here is safe (stack hazard 4); the modules come from the compiled cache when present.
        """
        if self.core is None:  # not already serving a session handed out before this arrived
            rename_actor_process(POOLED_ROLE)
        try:
            runtime = agentloop_runtime(self.settings)
            for path in msg.modules:
                runtime.prepare(path)
        except Exception:
            log.exception("pooled session actor: warm-up failed (the first turn loads instead)")
        self.send(sender, Warmed())

    def _release(self, release: ReleaseMe) -> None:
        """Let go of the session at once; say so soon (brain/actors/registry/release_report.py):
        until
        then the registry keeps sending the session's commands here, where it opens again.
        A suspension is said at once: the registry keeps the turn until its outcome comes."""
        counters, observations = self.metrics.take()
        self._drop_session()
        self._reports.add(release.session_id, release.handled, counters, observations,
                          time.monotonic())
        if release.suspended is not None:
            self.send(self.registry, self.suspended_release(release, self._reports.take()))
            return
        self._report_after(self._reports.released(self._backlog_waits))

    def _backlog_waits(self) -> bool:
        return self._board.read()[0] > 0

    def _report_after(self, secs: float | None) -> None:
        if secs == 0.0:
            report = self._reports.take()
            if report is not None:
                self.send(self.registry, report)
        elif secs is not None:
            self.wakeupAfter(secs, ReportRelease())

    def receiveMsg_ReportRelease(self, msg: ReportRelease, sender: Any) -> None:
        """The registry has work waiting for an actor: report now, or (serving the session
        again) at its next release."""
        if self._reports.asked(serving=self.core is not None):
            self._report_after(0.0)

    def _drop_session(self) -> str:
        """Release: nothing of the session stays open or locked (reads never need this actor);
        its closed writer and projection stay for its next open here
        (brain/actors/session/kept_journal.py)."""
        session_id = self.core.session_id if self.core is not None else ""
        self._flush_metrics()
        self.kept = keep(session_id, self.writer,
                         self.core.projection if self.core is not None else None)
        self._close_journal()
        self.forget_history()
        self._fresh_session_state()
        self.lease += 1
        rename_actor_process(POOLED_ROLE)
        return session_id
