"""Close a file descriptor now, whatever an event library has done to `os.close` (stack hazard 8).

A gunicorn gevent worker runs with gevent's monkey patches, and since gevent 25.8.1 these
replace `os.close`. For anything but a regular file (a directory, a socket) gevent's version does
not close: it asks the calling thread's event loop to close the descriptor at the loop's next
pass, so that a descriptor some watcher still polls is not pulled from under it. A thread of
gevent's pool that once made a hub never runs that loop again, so a descriptor closed there
stays open for the life of the thread.

Left to gevent, that would cost Brain admitted turns: a web worker admits a turn in a pool
thread (the fdatasyncs run off the event loop), and the journal's writer lock is an exclusive
`flock` on the journal *directory*. The writer's close would leave it open and the lock held by
the web worker; the session actor handed the turn would find the journal locked, give up after
its bounded wait, and the turn would stay `running` without ever running.

No event loop watches Brain's files and directories, so they are closed with the system call
itself: `posix.close`, the function `os.close` is before anyone patches it (gevent patches the
`os` module's attribute, never the `posix` module).
"""

from __future__ import annotations

import posix


def close_fd(fd: int) -> None:
    """Close `fd` at once (the descriptor of a file or directory no event loop watches)."""
    posix.close(fd)
