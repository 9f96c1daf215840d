"""Actor process names: a title for `ps`, and a short name with no space for the kernel."""

from __future__ import annotations

import subprocess
import sys

from brain.actors.thespian.proctitle import role_of, short_name

NAME_AND_READ_STAT = """
from brain.actors.thespian.proctitle import name_process
name_process("actor system")
print(open("/proc/self/comm").read().strip())
print(open("/proc/self/cmdline", "rb").read().split(b"\\0")[0].decode())
print(open("/proc/self/stat").read().split(" ")[19])  # num_threads, read as CPython 3.12 reads it
"""


def test_a_named_process_keeps_the_stat_fields_in_place() -> None:
    named = subprocess.run([sys.executable, "-c", NAME_AND_READ_STAT], capture_output=True,
                           text=True, timeout=30, check=True).stdout.splitlines()
    assert named == ["brain-actor-sys", "brain: actor system", "1"]


def test_roles_and_short_names() -> None:
    assert role_of("ModelExecutor") == "model executor"
    assert role_of("SessionActor") == "session"
    assert role_of("MultiProcAdmin") == "actor system"
    assert short_name("session 01a2b3c4") == "brain-session-0"
    assert short_name("registry") == "brain-registry"


def test_an_actor_in_its_hosts_process_leaves_the_hosts_priority_alone() -> None:
    import os

    from brain.actors.session.priority import lower_own_priority

    before = os.getpriority(os.PRIO_PROCESS, 0)
    lower_own_priority(5)  # as a SessionActor made on simpleSystemBase, in this process
    assert os.getpriority(os.PRIO_PROCESS, 0) == before
