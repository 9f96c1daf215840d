"""A new wakeup finds its place in the pending list instead of re-sorting all of it.

`wakeupTransportBase.addWakeup` (Thespian 4.0.1) appends the new timer to the actor's pending
wakeups and sorts the whole list again, comparing `ExpirationTimer`s through a Python-level
`__lt__` with a key lambda. Thespian cannot cancel a wakeup, so a pending list holds every
timer an actor armed that has not come due yet. A session actor arms a turn deadline for each
turn it starts or resumes (`BRAIN_MAX_TURN_SECS` ahead) and an idle timeout for each release,
so in a pooled actor the list holds the timers of every turn it served in the last turn-deadline
period: thousands on a busy server, each `wakeupAfter` sorting them all. In a profile of 1,000
sessions waiting on their models, the sort was about 6 % of the session actors' CPU.

Brain's `addWakeup` inserts the timer with `bisect.insort` on the same key: the same order (an
equal timer goes after the ones already there, as the stable sort put it), in a logarithmic
number of comparisons. docs/thespian-patches.md, 6.
"""

from __future__ import annotations

import bisect
import functools
from typing import Any

from thespian.system.timing import ExpirationTimer
from thespian.system.transport import wakeupTransportBase as wakeups

from brain.actors.thespian.fit import patch_once


def _timer_of(entry: tuple[Any, Any]) -> Any:
    return entry[0]


@patch_once("thespian_wakeups")
def insert_wakeups_in_place() -> None:
    """Patch Thespian's wakeupTransportBase as the module docstring says."""
    original = wakeups.wakeupTransportBase.addWakeup

    @functools.wraps(original)
    def addWakeup(self: Any, timePeriod: Any, payload: Any) -> None:  # noqa: N802, N803
        timer = ExpirationTimer(timePeriod)
        with self._wakeup_lock:
            bisect.insort(self._pendingWakeups, (timer, payload), key=_timer_of)
        if timer < self.run_time:  # as Thespian: this wakeup may be the next one due
            self.run_time = timer

    wakeups.wakeupTransportBase.addWakeup = addWakeup  # type: ignore[method-assign]
