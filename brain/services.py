"""`brain actors` and `brain web`: Brain's two tiers as separate services on one data dir.

`brain serve` runs both under one supervisor. A service manager (systemd, conf/) runs them apart
so that each restarts on its own: `brain actors` is the same supervisor (brain/supervisor.py)
without the web tier, which drains admitted turns on SIGTERM before stopping the actor system,
and `brain web` is plain gunicorn (exec'd, so the service manager signals gunicorn's master
itself).

The web tier finds the actor system through `run/actor.json` (port and identity). It joins the
actor system's start, not a start of its own: BRAIN_BOOT_ID is the boot id in that record, so
idempotency claims and the admin's identity check agree across both services, as under
`brain serve`. Restarting the actor system makes a new boot id, so the web tier must restart
with it (the systemd unit says so with PartOf=).
"""

from __future__ import annotations

import os
import sys
import time

from brain.actors.identity import read_run_record
from brain.actors.thespian.fit import ThespianMismatch, check_thespian
from brain.config import BrainConfig, ConfigError
from brain.data_dir import prepare_data_dir
from brain.drain import stop_draining
from brain.operator_token import ensure_operator_token
from brain.ports import local_host, port_is_free
from brain.settings import SettingError, Settings
from brain.supervisor import (
    StopRequest,
    Supervisor,
    clear_live_sockets,
    gunicorn_config_arg,
    use_default_config_file,
)

ACTORS_WAIT_SECS = 60.0


def _settings(command: str) -> Settings | None:
    try:
        use_default_config_file()
        settings = Settings.from_env()
        BrainConfig.load(settings.config)
        check_thespian()  # both tiers patch Thespian (brain/actors/thespian/fit.py)
    except (ConfigError, SettingError, ThespianMismatch) as exc:
        print(f"brain {command}: {exc}", file=sys.stderr)
        return None
    prepare_data_dir(settings.data_path)
    ensure_operator_token(settings)
    return settings


def run_actors() -> int:
    """The actor system until SIGTERM/SIGINT; then drain admitted turns and stop it."""
    stop_request = StopRequest()
    stop_request.install()
    settings = _settings("actors")
    if settings is None:
        return 2
    if settings.actor_port is not None and not port_is_free(settings.actor_bind,
                                                            settings.actor_port):
        print(f"brain actors: actor port {settings.actor_port} (BRAIN_ACTOR_PORT) is already "
              f"in use on {settings.actor_bind}", file=sys.stderr)
        return 2
    stop_draining(settings.data_path)
    return Supervisor(settings, stop_request, web=False).run()


def run_web(gunicorn_config: str | None) -> int:
    """Wait for this data dir's actor system, then become its gunicorn master (exec)."""
    settings = _settings("web")
    if settings is None:
        return 2
    try:
        config = gunicorn_config_arg(gunicorn_config)
    except SettingError as exc:
        print(f"brain web: {exc}", file=sys.stderr)
        return 2
    record = _wait_for_actors(settings)
    if record is None:
        print(f"brain web: no actor system of {settings.data_path} answered within "
              f"{ACTORS_WAIT_SECS:.0f} s (start `brain actors` first)", file=sys.stderr)
        return 1
    clear_live_sockets(settings)
    os.environ["BRAIN_DATA_DIR"] = str(settings.data_path)
    os.environ["BRAIN_ACTOR_PORT"] = str(record.actor_port)
    os.environ["BRAIN_BOOT_ID"] = record.identity.rpartition(" boot=")[2]
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-P", "-m", "gunicorn", "-c", config,
                              "brain.web.wsgi:application"])
    return 1  # not reached


def _wait_for_actors(settings: Settings):  # type: ignore[no-untyped-def]
    import socket

    deadline = time.monotonic() + ACTORS_WAIT_SECS
    while time.monotonic() < deadline:
        record = read_run_record(settings.data_path)
        if record is not None and record.identity.startswith(f"{settings.data_path} "):
            try:
                with socket.create_connection((local_host(record.actor_bind),
                                               record.actor_port), timeout=2.0):
                    return record
            except OSError:
                pass
        time.sleep(0.2)
    return None
