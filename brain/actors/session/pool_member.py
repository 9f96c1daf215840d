"""The session actor as a member of the registry's pool: warmed before any session, and left
clean after each.

A helper the actor holds as `actor.pool`, apart from the actor (brain/actors/session/actor.py),
which carries out one session's steps, because this is the process's life across sessions: the
registry forks session actors ahead of need and hands each a session, then the next. Here the
actor warms the Agentloop runtime while pooled, lets go of a session when the idle rule says so
(nothing of it stays resident: reads never need this actor), and tells the registry it did, at
once or a little later (brain/actors/session/release_report.py).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from brain.actors.admission_board import BoardReader
from brain.actors.session.activation import agentloop_runtime
from brain.actors.session.kept_journal import keep
from brain.actors.session.release_report import ReleaseReports
from brain.actors.thespian.proctitle import rename_actor_process
from brain.protocol.messages import Delivered, ReleaseMe, ReportRelease, Warmed, WarmUp

log = logging.getLogger("brain.actors.session.actor")  # the actor's own lines, under its name

POOLED_ROLE = "pooled session"


class PoolMembership:
    """The actor's life across sessions: warmed in the pool, a session let go when the core
    says so, and the registry told (at once, or a little later).

    Its own state is the releases not yet reported (`ReleaseReports`, across sessions); the
    admission board it reads says whether work waits for an actor. Of the actor's state it
    reads `settings`, `core`, `registry` and `writer`, takes the session's `metrics` with its
    release, keeps the closed writer in the actor's `kept`, and drops all the rest: the
    journal closed (`actor.journal`), the suspended history forgotten (`actor.suspension`),
    the session's state made fresh and the `lease` moved on, so nothing of one session
    reaches the next.
    """

    def __init__(self, actor: Any, reports: ReleaseReports,
                 board: BoardReader) -> None:
        self._actor = actor
        self._reports = reports
        self._board = board

    def warm_up(self, msg: WarmUp, sender: Any) -> None:
        """Make the Agentloop runtime and load the configured modules now, in the pool.

        This process is a fork of the registry, which never made an Engine, so building one
        here is safe (stack hazard 4); the modules come from the compiled cache, and a
        component not there yet is left for its first turn.
        """
        actor = self._actor
        if actor.core is None:  # not already serving a session handed out before this arrived
            rename_actor_process(POOLED_ROLE)
        try:
            from brain.actors.session.activation import wasm_cache_dir
            from brain.agentloop.precompile import needs_compiling

            runtime = agentloop_runtime(actor.settings)
            # A component not compiled yet is being compiled at start (precompile.py): waiting
            # for it here would hold back the pool, and with it the whole server's start;
            # the first turn that needs it waits instead.
            uncompiled = set(needs_compiling(list(msg.modules), wasm_cache_dir(actor.settings)))
            for path in msg.modules:
                if path not in uncompiled:
                    runtime.prepare(path)
        except Exception:
            log.exception("pooled session actor: warm-up failed (the first turn loads instead)")
        actor.send(sender, Warmed())

    def delivered(self, msg: Delivered) -> None:
        """A command arrived: note how busy the registry says it is, and report a release of
        another session still unreported before this one is served."""
        self._reports.busy = msg.busy
        pending = self._reports.pending
        if pending is not None and pending.session_id != msg.session_id:
            # The registry sends only the unreported session's commands; should another come,
            # report first, so the counts of the two never mix.
            log.warning("a command for session %s while the release of %s is unreported",
                        msg.session_id, pending.session_id)
            self._report_after(0.0)

    def release(self, release: ReleaseMe) -> None:
        """Let go of the session at once; say so soon (brain/actors/session/release_report.py):
        until then the registry keeps sending the session's commands here, where it opens again.
        A suspension is said at once: the registry keeps the turn until its outcome comes."""
        actor = self._actor
        counters, observations = actor.metrics.take()
        self._drop_session(release.suspended)
        self._reports.add(release.session_id, release.handled, counters, observations,
                          time.monotonic())
        if release.suspended is not None:
            actor.send(actor.registry,
                       actor.suspension.suspended_release(release, self._reports.take()))
            return
        self._report_after(self._reports.released(self._backlog_waits))

    def _backlog_waits(self) -> bool:
        return self._board.read()[0] > 0

    def _report_after(self, secs: float | None) -> None:
        if secs == 0.0:
            report = self._reports.take()
            if report is not None:
                self._actor.send(self._actor.registry, report)
        elif secs is not None:
            self._actor.wakeupAfter(secs, ReportRelease())

    def report_due(self) -> None:
        """The report's own timer: report now if it is due, or arm it again."""
        self._report_after(self._reports.due(self._actor.core is not None, time.monotonic(),
                                             self._backlog_waits))

    def report_asked(self) -> None:
        """The registry has work waiting for an actor: report now, or (serving the session
        again) at its next release."""
        if self._reports.asked(serving=self._actor.core is not None):
            self._report_after(0.0)

    def _drop_session(self, suspended: Any = None) -> str:
        """Release: nothing of the session stays open or locked (reads never need this actor);
        its closed writer and projection, and the `suspended` turn's history, stay for its next
        open here (brain/actors/session/kept_journal.py)."""
        actor = self._actor
        session_id = actor.core.session_id if actor.core is not None else ""
        actor._flush_metrics()
        actor.kept.put(keep(session_id, actor.writer,
                            actor.core.projection if actor.core is not None else None,
                            suspended,
                            actor.suspension.timeline if suspended is not None else None),
                       session_id)
        actor.journal.close()
        actor.suspension.forget_history()
        actor._fresh_session_state()
        actor.lease += 1
        rename_actor_process(POOLED_ROLE)
        return session_id
