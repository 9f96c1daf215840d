"""The one /proc/<pid>/stat reader, against real processes (and one awkward command name)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from brain.procstat import all_stats, parse_stat, read_stat

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")


def test_own_process():
    me = read_stat(os.getpid())
    assert (me.pid, me.ppid, me.pgrp) == (os.getpid(), os.getppid(), os.getpgrp())
    assert me.running and me.start_time > 0


def test_a_command_name_with_spaces_and_parentheses():
    line = b"42 (a) b (c) d) S 7 9 9 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 0 0"
    stat = parse_stat(42, line)
    assert (stat.state, stat.ppid, stat.pgrp, stat.start_time) == ("S", 7, 9, 123456)


def test_cpu_times_own_and_of_reaped_children():
    line = b"42 (x) S 7 9 9 0 -1 4194560 1 0 0 0 11 22 33 44 20 0 1 0 123456 0 0"
    stat = parse_stat(42, line)
    assert (stat.cpu_ticks, stat.reaped_cpu_ticks) == (11 + 22, 33 + 44)


def test_a_line_that_is_not_a_stat_line():
    with pytest.raises(ValueError):
        parse_stat(1, b"")
    with pytest.raises(ValueError):
        parse_stat(1, b"1 (x) S 0")


def test_a_zombie_is_not_running_and_a_reaped_pid_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    until = time.monotonic() + 10
    while read_stat(child.pid).state != "Z":
        assert time.monotonic() < until, "the child never exited"
        time.sleep(0.01)
    assert not read_stat(child.pid).running
    assert read_stat(child.pid).ppid == os.getpid()
    child.wait(timeout=5)
    with pytest.raises(OSError):
        read_stat(child.pid)


def test_all_stats_sees_this_process_and_its_child():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        by_pid = {proc.pid: proc for proc in all_stats()}
        assert by_pid[os.getpid()].ppid == os.getppid()
        assert by_pid[child.pid].ppid == os.getpid()
    finally:
        child.kill()
        child.wait(timeout=5)
