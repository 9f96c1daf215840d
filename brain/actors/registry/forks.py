"""When the registry forks a session actor: to fill its pool at boot, to refill it, and for work
that waits in the admission backlog.

Apart from the registry's routing (brain/actors/registry/actor.py) because a fork is the one slow
thing the registry does, so its timing is a policy of its own: a fork is never made on a
message's path, only from a timer, at a quiet moment or one per tick, and past the number of
actors the CPUs can run (brain/cpu_idle.py) only while a CPU idles. The commands of a burst are
then handled between forks rather than queued behind them, and the forks' warm-ups do not take
the CPU the web workers need. The pool (brain/actors/registry/pool.py) counts the actors and the
registry hands them out; this mixin makes them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from brain.actors.registry.pool import SessionActorPool
from brain.cpu_idle import CpuIdle, may_fork_for_backlog
from brain.protocol.messages import FillPool, RefillPool, Warmed, WarmUp
from brain.settings import Settings

log = logging.getLogger("brain.actors.registry.actor")  # the registry's own lines, under its name

REFILL_QUIET_SECS = 1.0
"""A refill fork (to bring the idle actors back up to the pool's size) waits until no command
or release has come in for this long. Under load the actors taken come back as their turns end
(a released session lets go after every turn), so forking replacements meanwhile only makes
actors that exit again once all are back; a fork also sits in front of the commands behind it
and its warm-up competes for the CPU. Shortage under load is met by forks for the backlog."""
BACKLOG_QUIET_SECS = 0.02
"""A fork for the backlog prefers a moment with no command for this long..."""
FORK_TICK_SECS = 0.005
"""While work waits in the backlog for want of an actor, one fork per tick: the messages that
arrive meanwhile are handled between forks, not behind a train of them."""
CPU_RECHECK_SECS = 0.1
"""While the CPUs are busy and work waits, how often the registry looks again whether to fork
(brain/cpu_idle.py)."""
FORK_MAX_DEFER_SECS = 0.25
"""...but a steady stream of commands still gets one fork this often. (20 ms got sessions out
of the backlog sooner, but in a burst the forks and their warm-ups then took the CPU the web
workers needed for the admissions: the slowest 202 of 600 went over the 1 s target.)"""


@dataclass(frozen=True)
class ForkForBacklog:
    """The registry's own timer: fork one actor for the backlog."""


class PoolForks:
    """Mixed into Registry, whose pool, slots, backlog and clock of the last command it reads,
    and whose `_serve_backlog` it calls once a fork may have made room."""

    _pool: SessionActorPool
    _slots: dict[str, Any]
    _backlog: Any
    _max_serving: int
    _last_command: float
    _modules: tuple[str, ...]
    _cpu_actors: int
    _cpu_idle: CpuIdle
    _fill_waiter: Any
    _warming: int
    _refill_armed: bool
    _fork_armed: bool
    _last_fork: float
    _serve_backlog: Any
    createActor: Any
    send: Any
    wakeupAfter: Any

    def _fork(self) -> Any:
        from brain.actors.session.actor import SessionActor

        address = self.createActor(SessionActor)
        self.send(address, WarmUp(self._modules))
        return address

    # --- filling at boot ------------------------------------------------------------------------

    def receiveMsg_FillPool(self, msg: FillPool, sender: Any) -> None:
        """Boot fills the pool before it says `ready`, so no request ever waits for these."""
        self._fill_waiter = sender
        self._fill_step()

    def _fill_step(self) -> None:
        """One actor first, whose warm-up writes the compiled-module cache, then the rest, which
        map that cache (pages shared by all) instead of each compiling the module into private
        memory (~2 MiB more USS each, and the CPU of 8 compiles at once)."""
        if not self._pool.short:
            self.send(self._fill_waiter, "filled")
            self._fill_waiter = None
            return
        self._warming = 1 if not self._pool.idle else self._pool.short
        for _ in range(self._warming):
            self._pool.adopt(self._fork())

    def receiveMsg_Warmed(self, msg: Warmed, sender: Any) -> None:
        if self._fill_waiter is None:
            return  # a refill's actor: nobody waits for it
        self._warming -= 1
        if self._warming == 0:
            self._fill_step()

    # --- refilling when quiet -------------------------------------------------------------------

    def _arm_refill(self, secs: float = REFILL_QUIET_SECS) -> None:
        if self._pool.short and not self._refill_armed:
            self._refill_armed = True
            self.wakeupAfter(secs, RefillPool())

    def _refill(self) -> None:
        self._refill_armed = False
        quiet_for = time.monotonic() - self._last_command
        if quiet_for < REFILL_QUIET_SECS:
            self._arm_refill(REFILL_QUIET_SECS - quiet_for)
            return
        if self._pool.short:
            self._pool.adopt(self._fork())  # one fork, then commands that came meanwhile
            self._arm_refill(0.0)
            self._serve_backlog()

    # --- forks for the backlog ------------------------------------------------------------------

    def _arm_fork_for_backlog(self) -> None:
        if not self._fork_armed and not self._pool.idle \
                and len(self._slots) < self._max_serving:
            self._fork_armed = True
            self.wakeupAfter(FORK_TICK_SECS, ForkForBacklog())

    def _fork_for_backlog(self) -> None:
        self._fork_armed = False
        now = time.monotonic()
        quiet_for = now - self._last_command
        if quiet_for < BACKLOG_QUIET_SECS and now - self._last_fork < FORK_MAX_DEFER_SECS:
            self._fork_armed = True
            self.wakeupAfter(max(BACKLOG_QUIET_SECS - quiet_for, FORK_TICK_SECS),
                             ForkForBacklog())
            return
        if self._backlog and not self._pool.idle and len(self._slots) < self._max_serving:
            if may_fork_for_backlog(len(self._slots), self._max_serving, self._cpu_actors,
                                    self._cpu_idle.has_room()):
                self._last_fork = now
                self._pool.adopt(self._fork())
            else:  # the CPUs are busy: look again soon (resident sessions may hold actors)
                self._fork_armed = True
                self.wakeupAfter(CPU_RECHECK_SECS, ForkForBacklog())
        self._serve_backlog()


def configured_modules(settings: Settings) -> tuple[str, ...]:
    """The module file of every configured Agentloop, read here once: loading the configuration
    in each pooled actor costs each ~1.2 MiB of private memory (measured)."""
    from brain.config import BrainConfig, agentloop_path

    try:
        agentloops = BrainConfig.load(settings.config).agentloops
    except Exception:
        log.exception("pooled session actors: no configuration to warm up from")
        return ()
    return tuple(str(agentloop_path(spec["path"])) for spec in agentloops.values())
