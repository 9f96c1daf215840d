"""A ChildActorExited names the pid and how the child ended (brain/actors/thespian/exits.py;
docs/thespian-patches.md has the report), in a real actor system of a fresh interpreter."""

from __future__ import annotations

import signal

from brain.actors.thespian.exit_status import exit_status
from tests.support.thespian_scenarios import run_scenario


class Notice:
    def __init__(self, pid: int | None, exitcode: int | None) -> None:
        self.pid, self.exitcode = pid, exitcode


def test_a_killed_child_is_named_with_its_pid_and_signal() -> None:
    shipped = run_scenario("exits", patched=False)
    fixed = run_scenario("exits", patched=True)
    assert shipped["notice"] == {"pid": None, "exitcode": None}
    assert fixed["notice"] == {"pid": fixed["child_pid"], "exitcode": -signal.SIGKILL}


def test_the_status_reads_as_one_phrase() -> None:
    assert exit_status(Notice(12, -9)) == "pid 12, killed by SIGKILL"
    assert exit_status(Notice(12, 3)) == "pid 12, exit code 3"
    assert exit_status(Notice(None, None)) == "pid unknown, exit status unknown"
