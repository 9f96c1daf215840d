"""Names for Brain's actor processes in `ps`, in the manner of gunicorn's `gunicorn: worker`.

Every actor process is a fork of the boot process, so without this they all show as
`python -m brain.actors.system.boot`. Thespian already retitles each process it starts (admin,
logger, every actor) through its `setProcName`; Brain replaces that function, before the
admin is forked, with one that writes `brain: actor system`, `brain: registry`,
`brain: model executor`, ... A session actor adds its session id once it learns it.
What of Thespian this replaces or relies on is the `thespian_proctitle` entry of
brain/actors/thespian/fit.py, checked before anything is patched.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from setproctitle import setproctitle, setthreadtitle

from brain.actors.thespian.fit import patch_once

THESPIAN_ROLES = {"MultiProcAdmin": "actor system", "logger": "actor logger"}


def name_process(role: str) -> None:
    """Show this process as `brain: <role>` in `ps` and /proc/<pid>/cmdline.

    The kernel's short name (`comm`, 15 bytes, `ps -o comm`) becomes `brain-<role>` without
    spaces: CPython 3.12+ finds a process's thread count by splitting /proc/self/stat on spaces,
    so a space in `comm` (setproctitle copies the title there) shifts the fields, and every fork
    of such a process warned that it was multi-threaded when it had one thread.
    """
    setproctitle(f"brain: {role}")
    setthreadtitle(short_name(role))


def short_name(role: str) -> str:
    """`actor system` -> `brain-actor-sys`: the kernel keeps 15 bytes of a process name."""
    return f"brain-{role.replace(' ', '-')}"[:15]


def role_of(thespian_name: str) -> str:
    """`ModelExecutor` -> `model executor`; `SessionActor` -> `session`."""
    if thespian_name in THESPIAN_ROLES:
        return THESPIAN_ROLES[thespian_name]
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", thespian_name)
    if len(words) > 1 and words[-1] == "Actor":
        words = words[:-1]
    return " ".join(word.lower() for word in words) or thespian_name


_own_process = False
"""True in a process Thespian started for an actor (and named): only there may an actor rename
its process; an actor run in-process (simpleSystemBase, in tests) leaves its host's name alone."""


def _brain_set_proc_name(name: str, actor_address: Any) -> None:
    global _own_process
    _own_process = True
    name_process(role_of(name))


def in_own_process() -> bool:
    """Whether this actor runs in a process Thespian started for it (see `_own_process`)."""
    return _own_process


def rename_actor_process(role: str) -> None:
    """An actor that learns more about itself (a session its id) says so in `ps`."""
    if _own_process:
        name_process(role)


@patch_once("thespian_proctitle")
def name_thespian_processes() -> None:
    """Make every process Thespian starts from here on name itself as Brain's."""
    from thespian.system import logdirector, multiprocCommon

    # the fit check reads the replaced signature (brain/actors/thespian/fit.py)
    @functools.wraps(multiprocCommon.setProcName)
    def setProcName(name: str, actorAddr: Any) -> None:  # noqa: N802, N803
        _brain_set_proc_name(name, actorAddr)

    multiprocCommon.setProcName = setProcName
    logdirector.setProcName = setProcName
