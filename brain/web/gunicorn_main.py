"""gunicorn as `brain serve` runs it: `python -m brain.web.gunicorn_main` + gunicorn's arguments.

Ctrl-C in a terminal sends SIGINT to the whole foreground process group, so gunicorn's master
and workers get it at the same time as `brain serve`. Left to gunicorn, SIGINT is a quick
shutdown: workers drop their requests mid-turn (and each gevent worker prints a `SystemExit`
from its signal handler). Stopping is the supervisor's decision: it drains admitted work, then
sends SIGTERM, gunicorn's graceful stop. So here the master and every worker ignore SIGINT;
everything else is plain gunicorn.
"""

from __future__ import annotations

import signal

from gunicorn.app.wsgiapp import run
from gunicorn.arbiter import Arbiter
from gunicorn.workers.base import Worker


def _master_ignores_sigint(arbiter: Arbiter) -> None:
    """Replaces Arbiter.handle_int: a queued SIGINT does nothing in the master."""


_worker_init_signals = Worker.init_signals


def _worker_init_signals_ignoring_sigint(worker: Worker) -> None:
    _worker_init_signals(worker)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def main() -> None:
    Arbiter.handle_int = _master_ignores_sigint  # type: ignore[method-assign]
    Worker.init_signals = _worker_init_signals_ignoring_sigint  # type: ignore[method-assign]
    run(prog="gunicorn")


if __name__ == "__main__":
    main()
