"""Keep Thespian's admin, and every actor it forks, in Brain's process group.

Thespian 4.0.1 daemonizes its admin: `startAdmin` (thespian/system/multiprocCommon.py), run in
the process forked to become the admin, calls `os.setsid()` and then forks once more. Brain
wants the opposite: every process it starts stays in the supervisor's process group, so a
SIGKILL of that group (a crash, or a crash test) reaches the admin and every actor, and the
supervisor (a child subreaper) inherits the double-forked admin instead of init. The boot
process does nothing else that needs a new session, so `os.setsid` becomes a no-op in it and in
everything it forks. `startAdmin` finds `os.setsid` on the `os` module when it runs, which is
what the `thespian_no_daemon` entry of brain/actors/thespian/fit.py checks before this is done.
"""

from __future__ import annotations

import os

from brain.actors.thespian.fit import patch_once


@patch_once("thespian_no_daemon")
def keep_admin_in_this_process_group() -> None:
    """Make `os.setsid` a no-op in this process and its forks, before the admin is started."""
    os.setsid = lambda: None
