"""BRAIN_LOG_FORMAT: plain text lines (the default, for a terminal) or one JSON object a line.

A JSON line carries the request id, session id and journal sequence where they are known: in a
web worker from the request being served (brain.request_context, one context per greenlet), in
an actor from the message being handled (set by brain/actors/trace.py). Actor log records are
formatted in Thespian's logger process, not where they were made, so the fields are copied onto
each record when it is created (a record factory) and travel with it.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from typing import Any

from brain import request_context

CONTEXT_FIELDS = ("request_id", "session_id", "sequence")
_VARS = {"request_id": request_context.request_id, "session_id": request_context.session_id,
         "sequence": request_context.sequence}


def json_logs() -> bool:
    return os.environ.get("BRAIN_LOG_FORMAT", "text").strip().lower() == "json"


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message", "pid", request_id?, session_id?, sequence?,
    "exception"?}` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
            "pid": record.process}
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is None:
                value = _VARS[name].get()
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, default=str)


def install_record_context() -> None:
    """Copy the context fields onto every record made in this process (and its forks)."""
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        for name, var in _VARS.items():
            if getattr(record, name, None) is None:
                setattr(record, name, var.get())
        return record

    logging.setLogRecordFactory(factory)


def configure_root(level: int = logging.WARNING) -> None:
    """`logging.basicConfig`, in the chosen format."""
    handler = logging.StreamHandler()
    if json_logs():
        handler.setFormatter(JsonFormatter())
        install_record_context()
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


def thespian_log_defs(plain: dict[str, Any]) -> dict[str, Any]:
    """Thespian's logDefs (its logger process's dictConfig), in the chosen format."""
    if not json_logs():
        return plain
    defs = json.loads(json.dumps(plain))
    defs["formatters"] = {"plain": {"()": "brain.logs.JsonFormatter"}}
    return defs


def gunicorn_logconfig(level: str, access: bool = False) -> dict[str, Any]:
    """gunicorn's `logconfig_dict` for JSON lines: its own logs and Brain's, all to stderr.

    gunicorn writes access lines whenever a logging config is given; `access` keeps them off
    (as `accesslog = None` does for text) unless asked for.
    """
    handler = {"class": "logging.StreamHandler", "formatter": "json",
               "stream": "ext://sys.stderr"}
    return {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"json": {"()": "brain.logs.JsonFormatter"}},
        "handlers": {"console": handler, "error_console": handler},
        "root": {"level": level.upper(), "handlers": ["error_console"]},
        "loggers": {
            "gunicorn.error": {"level": level.upper(), "handlers": ["error_console"],
                               "propagate": False, "qualname": "gunicorn.error"},
            "gunicorn.access": {"level": "INFO" if access else "CRITICAL", "handlers": ["console"],
                                "propagate": False, "qualname": "gunicorn.access"},
        },
    }
