"""gunicorn settings for Brain's web tier: gevent workers, values from the BRAIN_* settings.

They ship inside the package, so an installed Brain (a wheel, `pip install .`) serves from any
working directory: `brain serve` hands gunicorn `-c python:brain.web.gunicorn_conf`. An operator
who wants other gunicorn knobs copies `conf/gunicorn.conf.py` (which starts from these values),
edits it and runs `brain serve --gunicorn-config PATH`.
"""

import os
import resource

from brain.actors.identity import read_run_record
from brain.logs import gunicorn_logconfig, json_logs
from brain.settings import Settings
from brain.web.multiproc import (
    MULTIPROC_ENV,
    mark_worker_dead,
    multiproc_dir,
    prepare_multiproc_dir,
)


def raise_descriptor_limit(wanted: int) -> None:
    """Let each worker hold `wanted` descriptors if the hard limit allows (workers inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


_settings = Settings.from_env()

if not _settings.boot_id:
    # Plain `gunicorn -c ...` beside `brain actors` (conf/systemd): join the running actor
    # system's start, as `brain web` does, so every worker shares one boot id (idempotency
    # claims) and expects that admin. Read here, in the master, before any worker forks.
    _record = read_run_record(_settings.data_path)
    if _record is not None and _record.identity.startswith(f"{_settings.data_path} "):
        os.environ["BRAIN_ACTOR_PORT"] = str(_record.actor_port)
        os.environ["BRAIN_BOOT_ID"] = _record.identity.rpartition(" boot=")[2]

# prometheus_client's multiprocess mode: its value class is chosen when a process first imports
# it, so the directory is named here, in the master, before any worker forks (and imports it).
os.environ[MULTIPROC_ENV] = str(multiproc_dir(_settings.data_path))


def on_starting(server: object) -> None:
    """Once per master, before the first worker: no file of an earlier run counts again."""
    prepare_multiproc_dir(multiproc_dir(_settings.data_path))


def child_exit(server: object, worker: object) -> None:
    """A worker that exited no longer counts in the `livesum` gauges (open SSE streams)."""
    mark_worker_dead(worker.pid)  # type: ignore[attr-defined]


bind = _settings.listen
worker_class = "brain.web.gunicorn_worker.BrainGeventWorker"  # gevent, contract-shaped refusals
workers = _settings.web_workers
# One greenlet per connection: live SSE followers hold theirs for as long as they follow. An
# idle follower costs a greenlet and a socket (a few KiB), so the bound is high: 2,000 idle
# followers and 1,000 clients driving turns at once fit in the default two workers. Each
# connection is a file descriptor, so the soft descriptor limit is raised towards the hard one.
worker_connections = 4096
raise_descriptor_limit(worker_connections + 256)
# Connections the kernel queues before a worker accepts them (gunicorn's default is 2,048): a
# fleet's burst of submits connects all at once, and a connect dropped from a full queue waits
# a second or more for the kernel's retry. net.core.somaxconn caps it.
backlog = 4096
# Sync sends wait for whole turns; gevent workers keep heartbeating while they wait.
timeout = 30
graceful_timeout = max(_settings.drain_secs, 1)
# Seconds a request head may take (from the connection's start or the previous answer), and
# then, counted from the end of the head, its whole body (brain/web/timed_body.py: 408 after).
keepalive = 5
preload_app = False
accesslog = None
errorlog = "-"
loglevel = "warning"
proc_name = "brain-web"
if json_logs():  # BRAIN_LOG_FORMAT=json: gunicorn's lines and Brain's, one JSON object each
    logconfig_dict = gunicorn_logconfig(loglevel)
# No control socket: gunicorn would serve it from a thread of the master, which forks workers
# (again whenever one dies) and must have no thread when it does: a fork copies only the forking
# thread, so a lock another thread held stays locked in the worker, and Python 3.12+ warns
# ("multi-threaded, use of fork()"). Its default path ($XDG_RUNTIME_DIR/gunicorn.ctl or
# ~/.gunicorn/gunicorn.ctl) is also one per user, not per server: each Brain started by the same
# user would take it over from the last. Brain is driven by `brain serve` and signals instead.
control_socket_disable = True
