"""gunicorn settings for Brain, for an operator to copy and edit.

`brain serve` uses the settings shipped in the package (`brain.web.gunicorn_conf`) unless it is
given `--gunicorn-config PATH`. This file starts from those values, so a copy of it only needs
the lines it changes; `brain serve --gunicorn-config conf/gunicorn.conf.py` runs it as it is.
Bind address, worker count and graceful timeout follow BRAIN_LISTEN, BRAIN_WEB_WORKERS and
BRAIN_DRAIN_SECS; set those rather than `bind`, `workers` or `graceful_timeout` here, so that
`brain serve` and its web tier agree on them.
"""

from brain.web.gunicorn_conf import *  # noqa: F403 (gunicorn reads this module's globals)

# Examples of knobs an operator may want to change:
# worker_connections = 8192   # more live SSE followers per worker (default 4096)
# keepalive = 10              # seconds a request head may take, and then its body (default 5;
#                             # a body still incomplete is answered 408 request_timeout)
# accesslog = "-"             # log every request to stderr
# loglevel = "info"
