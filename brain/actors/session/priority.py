"""A session actor's niceness: the processes that answer at once go first.

A turn's computing (opening, replaying, the Agentloop) can keep every CPU busy; the web workers
(accepting, 202s, reads), the registry and the executors each do a little for every request
and every turn, and behind dozens of busy session actors they would wait their turn on the run
queue like any of them. A niceness (`BRAIN_SESSION_ACTOR_NICE`) makes the kernel prefer them.
"""

from __future__ import annotations

import os

from brain.actors.thespian.proctitle import in_own_process


def lower_own_priority(niceness: int) -> None:
    """Let this session actor yield the CPUs to the processes that answer at once; only in a
    process of its own: an actor run in its host's process (simpleSystemBase, in tests) leaves
    the host's priority alone."""
    if niceness > 0 and in_own_process():
        try:
            os.nice(niceness)
        except OSError:
            pass  # not allowed here: run at the inherited priority
