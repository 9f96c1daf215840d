"""gunicorn settings for Brain: gevent workers, values from BRAIN_* settings.

`brain serve` passes this file with `-c`; it reads the same Settings object as the rest of Brain.
"""

from brain.settings import Settings

_settings = Settings.from_env()

bind = _settings.listen
worker_class = "gevent"
workers = _settings.web_workers
worker_connections = 1000
# Sync sends wait for whole turns; gevent workers keep heartbeating while they wait.
timeout = 30
graceful_timeout = max(_settings.drain_secs, 1)
keepalive = 5
preload_app = False
accesslog = None
errorlog = "-"
loglevel = "warning"
proc_name = "brain-web"
# No control socket: gunicorn would serve it from a thread of the master, which forks workers
# (again whenever one dies) and must have no thread when it does: a fork copies only the forking
# thread, so a lock another thread held stays locked in the worker, and Python 3.12+ warns
# ("multi-threaded, use of fork()"). Its default path ($XDG_RUNTIME_DIR/gunicorn.ctl or
# ~/.gunicorn/gunicorn.ctl) is also one per user, not per server: each Brain started by the same
# user would take it over from the last. Brain is driven by `brain serve` and signals instead.
control_socket_disable = True
