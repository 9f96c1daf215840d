"""When a session actor tells the registry it let go of its session.

An actor releases its session the moment the idle rule says so: the journal is closed, the
state dropped, the session's timers void. Telling the registry (`Released`) is a separate
matter. Every `Released` is a Thespian message the actor sends and the registry receives and
acknowledges, about a twentieth of a text turn's CPU with 16 sessions at once, and most are
wasted: a client usually sends its session's next command a few milliseconds after the answer,
and the registry, still holding the session's slot, forwards it to the same actor, which opens
the session again.

So, while the registry serves more sessions at once than there are CPUs (it says so in each
`Delivered`: `busy`), the report waits `REPORT_DELAY_SECS`. With fewer, CPU is not what runs out
and the actor reports at once: a registry that slept through a whole turn took ~0.2 ms longer to
take the next command (measured on one session's sequential turns). Until the report goes, the
registry keeps the slot and forwards the session's commands here (never another session's), and
the actor opens the session afresh for each, exactly as after a report the pool would hand it
out again. One report then covers every release since the last: the commands handled in all of
them (the registry frees the actor only when that equals what it forwarded), how many
times the session was opened (what the pool's recycling counts) and the metric deltas. The
report goes at once when work is waiting for an actor (the admission board shows a backlog, or
the registry asks with `ReportRelease` as work starts to wait), so a slot is not held from a
session that needs an actor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from brain.metrics import MetricBatch
from brain.protocol.messages import Released

REPORT_DELAY_SECS = 0.25


@dataclass
class UnreportedRelease:
    session_id: str
    handled: int = 0  # commands handled across the releases not yet reported
    opens: int = 0  # times the session was opened (and released) here since the last report
    metrics: MetricBatch = field(default_factory=MetricBatch)
    released_at: float = 0.0  # monotonic time of the latest release


class ReleaseReports:
    """The releases of one actor's session that the registry has not heard of yet, and when to
    tell it. The actor carries out the answers: send `take()` to the registry, or arm its
    one timer (`ReportRelease` after the seconds given), which then calls `due`."""

    def __init__(self) -> None:
        self.pending: UnreportedRelease | None = None
        self.busy = False  # the last command came while the registry served many sessions
        self.armed = False  # the actor's timer is set
        self._at_once = False  # the registry asked for the next release's report

    def add(self, session_id: str, handled: int, counters: dict[Any, float],
            observations: dict[str, list[float]], now: float) -> None:
        """Count a release. A release of another session than the pending one is a caller's
        error: the registry forwards only the pending session's commands until it is told."""
        pending = self.pending
        if pending is None:
            pending = self.pending = UnreportedRelease(session_id)
        elif pending.session_id != session_id:
            raise ValueError(f"release of {session_id} while {pending.session_id} is "
                             "unreported")
        pending.handled += handled
        pending.opens += 1
        pending.metrics.absorb(counters, observations)
        pending.released_at = now

    def released(self, backlog: Callable[[], bool]) -> float | None:
        """After `add`: 0.0 to report now, seconds to arm the timer with, or None (armed
        already). Now when the registry is not busy, asked for it, or `backlog()` says work
        waits for an actor (read last: only when the rest would wait)."""
        if not self.busy or self._at_once or backlog():
            return 0.0
        if self.armed:
            return None
        self.armed = True
        return REPORT_DELAY_SECS

    def asked(self, serving: bool) -> bool:
        """The registry asked for a report: True to report now; while the actor serves the
        session again, the report goes at its next release instead."""
        if serving:
            self._at_once = True
            return False
        return True

    def due(self, serving: bool, now: float, backlog: Callable[[], bool]) -> float | None:
        """The timer fired: 0.0 to report now, seconds to arm it again with, or None. Serving
        the session again, nothing: its next release decides afresh."""
        self.armed = False
        if serving:
            return None
        due_in = self.due_in(now)
        if due_in is None:
            return None
        if due_in > 0 and not backlog():
            self.armed = True
            return due_in
        return 0.0

    def due_in(self, now: float) -> float | None:
        """Seconds until the pending report is due (0: now), or None when nothing is pending."""
        if self.pending is None:
            return None
        return max(0.0, self.pending.released_at + REPORT_DELAY_SECS - now)

    def take(self) -> Released | None:
        """The report of everything pending, which is then no longer pending."""
        self._at_once = False
        pending, self.pending = self.pending, None
        if pending is None:
            return None
        counters, observations = pending.metrics.take()
        return Released(pending.session_id, pending.handled, counters, observations,
                        opens=pending.opens)
