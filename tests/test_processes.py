"""brain.processes: what the supervisor reads of its process tree, on real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from brain.processes import direct_children

# Run in a child Python, which becomes a subreaper as `brain serve` does: an orphan it adopts
# and a Popen child of its own both exit; reap_adopted must reap the first and leave the
# second to Popen (its exit code is Popen's to read).
SCENARIO = textwrap.dedent("""
    import ctypes, os, subprocess, sys, time
    from brain.processes import direct_children, reap_adopted
    from brain.procstat import read_stat

    assert ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    own = subprocess.Popen([sys.executable, "-c", "pass"])
    # A child that forks the orphan-to-be and exits at once; the orphan exits soon after.
    parent = subprocess.Popen([sys.executable, "-c",
        "import os, time\\nif os.fork() == 0:\\n    time.sleep(0.3)\\n    os._exit(7)\\n"
        "print(0)"], stdout=subprocess.PIPE)
    parent.wait()
    deadline = time.monotonic() + 10
    def zombies():
        found = []
        for pid in direct_children():
            try:
                if read_stat(pid).state == "Z":
                    found.append(pid)
            except OSError:
                pass
        return set(found)
    while time.monotonic() < deadline and len(zombies()) < 2:
        time.sleep(0.02)
    exited = zombies()
    assert own.pid in exited and len(exited) == 2, exited
    reap_adopted({own.pid})
    assert zombies() == {own.pid}, zombies()
    assert own.wait(timeout=5) == 0
    print("ok")
""")


def test_reap_adopted_reaps_orphans_and_leaves_popen_children_alone() -> None:
    done = subprocess.run([sys.executable, "-c", SCENARIO], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_direct_children_lists_a_child_until_it_is_reaped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in (direct_children() or [])
    finally:
        child.kill()
        child.wait(timeout=10)
    assert child.pid not in (direct_children() or [])
    assert os.getpid() not in (direct_children() or [])
