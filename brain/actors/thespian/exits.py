"""A ChildActorExited says which process ended and how: its pid and its exit code or signal.

Thespian (4.0.1) tells a parent only the address of a child that exited. The process that
forked the child (the admin for actors created with a global name, a parent actor for its own
children) learns its pid and exit code when `MultiProcReplicator.childDied` finds it dead, and
then drops both. Brain's supervisor must log which actor died and how (a SIGKILL from the OOM
killer reads differently from a crash), so this patch keeps what `childDied` finds, per child
address, and every ChildActorExited made in that process about that child carries it as
`pid` and `exitcode` (multiprocessing's convention: a negative exit code is the signal). The
admin forwards a global-name actor's exit to the actor that asked for it with a new
ChildActorExited, which picks the same facts up. docs/thespian-patches.md, 8.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Any

from brain.actors.thespian.fit import patch_once

KEPT_EXITS = 256
"""How many children's exit facts a process keeps: a notice is made right after its child is
found dead, so the last few hundred are more than enough."""

_exits: OrderedDict[str, tuple[int | None, int | None]] = OrderedDict()


def _remember(address: Any, pid: int | None, exitcode: int | None) -> None:
    _exits[str(address)] = (pid, exitcode)
    _exits.move_to_end(str(address))
    while len(_exits) > KEPT_EXITS:
        _exits.popitem(last=False)


@patch_once("thespian_exits")
def tell_how_children_exit() -> None:
    """Patch Thespian as the module docstring says."""
    from thespian.actors import ChildActorExited
    from thespian.system.multiprocCommon import MultiProcReplicator

    original_child_died = MultiProcReplicator.childDied

    @functools.wraps(original_child_died)
    def childDied(self: Any) -> Any:  # noqa: N802
        for child in getattr(self, "_child_procs", []):
            process = child.childProc
            if not process.is_alive():  # reaps it: exitcode is set from here on
                _remember(getattr(child, "childRealAddr", child.childAddr), process.pid,
                          process.exitcode)
        return original_child_died(self)

    original_init = ChildActorExited.__init__

    @functools.wraps(original_init)
    def __init__(self: Any, exitedChildAddress: Any) -> None:  # noqa: N803, N807
        original_init(self, exitedChildAddress)
        self.pid, self.exitcode = _exits.get(str(exitedChildAddress), (None, None))

    MultiProcReplicator.childDied = childDied  # type: ignore[method-assign]
    ChildActorExited.__init__ = __init__  # type: ignore[method-assign]
