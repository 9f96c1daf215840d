"""The boot process kills actor processes that outlive the actor system's shutdown.

With the supervisor SIGKILLed, the boot process is the last one that can stop an actor whose
exit request was lost with the admin; an orphan would otherwise live on serving nothing.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Iterator

import pytest

from brain.actors.system.boot import actor_processes, kill_leftovers
from brain.procstat import read_stat

TITLED_SLEEPER = ("import setproctitle, sys, time; setproctitle.setproctitle(sys.argv[1]); "
                  "print('up', flush=True); time.sleep(60)")


@pytest.fixture
def leftover() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this process group titled like an actor."""
    proc = subprocess.Popen([sys.executable, "-c", TITLED_SLEEPER, "brain: session leftover"],
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_actor_titled_processes_of_the_group_are_found(leftover) -> None:
    assert leftover.pid in {proc.pid for proc in actor_processes()}


def test_a_process_that_outlived_the_shutdown_is_killed(leftover) -> None:
    kill_leftovers([read_stat(leftover.pid)], grace_secs=0.2)
    assert leftover.wait(timeout=10) == -9


def test_a_reused_pid_is_left_alone(leftover) -> None:
    """Another process now holding the pid (another start time) is not the actor."""
    stat = read_stat(leftover.pid)
    kill_leftovers([dataclasses.replace(stat, start_time=stat.start_time - 1)], grace_secs=0.2)
    assert leftover.poll() is None
