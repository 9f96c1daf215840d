"""Brain's four patches to Thespian's message path, applied together wherever actors run.

Each makes a message cheaper without changing what Thespian delivers or when (the measured
reasons are in docs/thespian-patches.md): one `poll` object per wait instead of a selector
rebuilt each pass, an idle pass that skips sockets with nothing to send, timers kept sorted in
place, and messages described for the debug log only when a line is written. `brain serve`
applies them before its actor system forks the admin and every actor; the actor-message
benchmark applies the same set, so what it measures is what Brain runs.
"""

from __future__ import annotations

from brain.actors.thespian.identify import describe_messages_lazily
from brain.actors.thespian.idle import cheapen_idle_socket_walk
from brain.actors.thespian.poll import use_one_shot_poll
from brain.actors.thespian.wakeups import insert_wakeups_in_place


def speed_up_message_path() -> None:
    """Apply the four patches (each applies once; brain/actors/thespian/fit.py checks they fit
    first)."""
    use_one_shot_poll()
    cheapen_idle_socket_walk()
    insert_wakeups_in_place()
    describe_messages_lazily()
