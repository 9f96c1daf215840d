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
