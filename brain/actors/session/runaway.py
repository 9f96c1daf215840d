"""A warning in the server log when an Agentloop has computed past BRAIN_COMPUTE_WARN_SECS.

A loop stuck in `while True: pass` holds its session until the turn deadline (half an hour by
default) and shows nothing: its turn looks like one waiting on a slow model. So each activation
has a watch: once the time since the activation began passes the bound, and the guest is then
computing (not inside a guest call, where it waits on the actor, a model or a Tool), the watch
logs one warning naming the session, the turn and the Agentloop. When the bound passes while
the guest waits, the watch looks again shortly after that call returns. At most one warning
per activation; an activation that ends first costs one timer, cancelled.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("brain.agentloop")

# After a guest call returns past the bound: how long the guest must then compute to be named.
LOOK_AGAIN_SECS = 1.0


class RunawayWatch:
    """Watches one activation; `waiting()` wraps each guest call, `stop()` its end."""

    def __init__(self, session_id: str, turn: int, agentloop: str, warn_after: float) -> None:
        self.session_id = session_id
        self.turn = turn
        self.agentloop = agentloop
        self.warn_after = warn_after
        self.started = time.monotonic()
        self.warned = False
        self._lock = threading.Lock()
        self._in_call = 0
        self._due = False  # the bound passed while the guest waited
        self._stopped = False
        self._timer: threading.Timer | None = None
        if warn_after > 0:
            self._arm(warn_after)

    def _arm(self, secs: float) -> None:
        timer = threading.Timer(secs, self._look)
        timer.daemon = True
        timer.name = f"runaway-watch-{self.turn}"
        self._timer = timer
        timer.start()

    def _look(self) -> None:
        with self._lock:
            if self._stopped or self.warned:
                return
            if self._in_call:
                self._due = True
                return
            self.warned = True
        log.warning("session %s: turn %d has run %.0f s with its Agentloop %r computing (not "
                    "waiting on a model, Tool or Brain); a loop that never returns holds the "
                    "session until the turn deadline. Cancel it with POST "
                    "/v1/sessions/%s/cancel", self.session_id, self.turn,
                    time.monotonic() - self.started, self.agentloop, self.session_id)

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Around a guest call: the guest waits, it does not compute."""
        with self._lock:
            self._in_call += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_call -= 1
                look_again = self._due and not self._in_call and not self._stopped
                self._due = False
                if look_again:
                    self._arm(LOOK_AGAIN_SECS)

    def stop(self) -> None:
        """The activation ended: no warning after this."""
        with self._lock:
            self._stopped = True
            timer = self._timer
        if timer is not None:
            timer.cancel()
