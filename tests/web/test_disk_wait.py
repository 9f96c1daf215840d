"""Admissions run on the hub while commits wait little on the disk, in gevent's pool when they
wait long (brain/web/disk_wait.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from brain.web.disk_wait import INLINE_BELOW_SECS, POOL_ABOVE_SECS, SAMPLES, DiskWaitPlacement

FAST, SLOW = 0.0001, 0.004  # an fdatasync on a local SSD; one on a disk that flushes its cache


def test_work_starts_inline_and_moves_to_the_pool_once_every_recent_commit_waited_long() -> None:
    placement = DiskWaitPlacement()
    for _ in range(SAMPLES - 1):
        placement.note_wait(SLOW)
    assert not placement.pooled  # too few commits timed to judge the disk
    for _ in range(SAMPLES):
        placement.note_wait(FAST)
    for _ in range(SAMPLES - 1):
        placement.note_wait(SLOW)
    assert not placement.pooled  # one recent commit shows the disk syncs fast
    placement.note_wait(SLOW)
    assert placement.pooled


def test_commits_that_waited_for_a_cpu_or_the_gil_do_not_move_the_work() -> None:
    placement = DiskWaitPlacement()
    for n in range(4 * SAMPLES):
        placement.note_wait(FAST if n % 8 == 0 else 0.009)  # most wait 9 ms, the disk 0.1
    assert not placement.pooled


def test_work_comes_back_inline_only_below_the_lower_threshold() -> None:
    placement = DiskWaitPlacement()
    for _ in range(SAMPLES):
        placement.note_wait(SLOW)
    assert placement.pooled
    between = (INLINE_BELOW_SECS + POOL_ABOVE_SECS) / 2
    for _ in range(SAMPLES):
        placement.note_wait(between)
    assert placement.pooled  # between the thresholds the choice stays
    placement.note_wait(FAST)
    assert not placement.pooled
    for _ in range(2 * SAMPLES):
        placement.note_wait(between)
    assert not placement.pooled


def test_a_commit_counts_its_waiting_not_its_computing() -> None:
    placement = DiskWaitPlacement()
    with placement.commit_timed():
        time.sleep(0.01)
    with placement.commit_timed():
        spin_until = time.thread_time() + 0.01
        while time.thread_time() < spin_until:
            pass
    waited, computed = placement.recent_waits
    assert waited >= 0.009
    assert computed < 0.005


def test_outside_gevent_the_work_runs_in_the_calling_thread() -> None:
    import threading

    placement = DiskWaitPlacement()
    placement.pooled = True
    assert placement.run(threading.get_ident) == threading.get_ident()


def test_in_a_gevent_worker_slow_commits_send_the_work_to_the_pool_and_fast_ones_back() -> None:
    code = textwrap.dedent("""
        from gevent import monkey
        monkey.patch_all()
        import threading
        import time
        from brain.web.disk_wait import SAMPLES, DiskWaitPlacement

        placement = DiskWaitPlacement()
        hub_thread = threading.get_ident()

        def commit(wait):
            with placement.commit_timed():
                time.sleep(wait)  # a commit whose fdatasync takes `wait`
            return threading.get_ident()

        ran_in = [placement.run(commit, 0.003) for _ in range(SAMPLES + 2)]
        print(ran_in[0] == hub_thread, ran_in[-1] != hub_thread, placement.pooled)
        placement.run(commit, 0.0)
        print(placement.pooled, placement.run(threading.get_ident) == hub_thread)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["True", "True", "True", "False", "True"]
