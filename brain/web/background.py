"""Run a long-lived background loop in a web worker: a greenlet under gevent, else a thread."""

from __future__ import annotations

import threading
from collections.abc import Callable


def gevent_active() -> bool:
    """True in a gunicorn gevent worker (sockets patched), False in plain processes and tests."""
    try:
        from gevent import monkey
    except ImportError:
        return False
    return monkey.is_module_patched("socket")


def spawn_background(target: Callable[[], None], name: str) -> None:
    if gevent_active():
        import gevent

        gevent.spawn(target)
    else:
        threading.Thread(target=target, name=name, daemon=True).start()
