"""`brain serve` (and `brain actors`): a plain supervisor loop, in the manner of gunicorn's arbiter.

It refuses a taken HTTP or actor port before starting anything (exit code 2), starts the
actor-system process, waits until the admin answers, starts gunicorn, prints its address once
the server answers, and then only watches: if gunicorn, the boot process or the actor-system
admin dies, or SIGTERM/SIGINT arrives, it stops everything it started,
web first (so no request is cut off mid-turn while actors still run), then the actors, and
finally SIGKILLs any descendant that outlived its parent, so no process is left behind.
`brain actors` (brain/services.py) runs the same loop without gunicorn.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from brain.actors.data_dir_lock import DataDirTaken, data_dir_holder
from brain.actors.identity import ACTOR_PORT_REFUSED
from brain.actors.thespian.fit import ThespianMismatch, check_thespian
from brain.config import BrainConfig, ConfigError
from brain.data_dir import prepare_data_dir
from brain.drain import start_draining, stop_draining
from brain.journal.statuses import session_statuses
from brain.operator_token import ensure_operator_token
from brain.ports import local_host, port_is_free
from brain.processes import descendants, is_running, listening_process, reap_adopted
from brain.service_manager import notify_service_manager
from brain.sessions.scan import sessions_in_flight
from brain.settings import SettingError, Settings
from brain.web.idempotency import new_boot_id

ACTOR_READY_TIMEOUT_SECS = 60.0
ACTOR_STOP_TIMEOUT_SECS = 20.0
HTTP_READY_TIMEOUT_SECS = 60.0
# How long a start may spend compiling the configured Agentloops before /readyz says ready.
PREPARE_TIMEOUT_SECS = 900.0


PACKAGED_GUNICORN_CONFIG = "python:brain.web.gunicorn_conf"
"""The gunicorn settings shipped inside the package, so an installed Brain needs no checkout."""


def gunicorn_config_arg(path: str | None) -> str:
    """gunicorn's `-c` value: an operator's settings file, or the packaged settings module.

    A named file that does not exist is the operator's mistake, refused before anything starts.
    """
    if path is None:
        return PACKAGED_GUNICORN_CONFIG
    resolved = Path(path).resolve()
    if not resolved.is_file():
        raise SettingError(f"--gunicorn-config: {path} is not a file")
    return str(resolved)


PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1


def _die_with_supervisor() -> None:
    """Runs in each child before exec: SIGTERM it if the supervisor dies, even by SIGKILL.

    Gunicorn then stops, and the boot process shuts the actor system down, instead of both
    living on as orphans serving a data dir nobody supervises.
    """
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _child_setup() -> None:
    """Runs in each child before exec: die with the supervisor, and leave Ctrl-C to it.

    A terminal's Ctrl-C sends SIGINT to the whole process group. Only the supervisor acts on
    it (drain, then SIGTERM to each child in order); a child that ignores SIGINT from its first
    instruction cannot print a KeyboardInterrupt traceback or cut requests short.
    """
    _die_with_supervisor()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def become_subreaper() -> None:
    """Orphaned descendants (Thespian's double-forked admin) re-parent to us, not to init.

    That keeps every process Brain starts visible to `descendants()` and reapable by us, and
    makes the actor-system admin our child, whose death we notice.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("brain: could not become a child subreaper", file=sys.stderr)


class StopRequest:
    """Set by SIGTERM or SIGINT; installed before anything else so that neither interrupts."""

    def __init__(self) -> None:
        self.requested = False

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.requested = True


class Supervisor:
    """Starts Brain's processes, watches them, and stops them all: `brain serve` (web=True)
    and `brain actors` (web=False, the actor system alone) share this one loop."""

    def __init__(self, settings: Settings, stop_request: StopRequest,
                 gunicorn_config: str = PACKAGED_GUNICORN_CONFIG, *, web: bool = True) -> None:
        self.settings = settings
        self.stop_request = stop_request
        self.gunicorn_config = gunicorn_config
        self.with_web = web
        self.command = "serve" if web else "actors"  # names the command in what it prints
        self.boot: subprocess.Popen[bytes] | None = None
        self.web: subprocess.Popen[bytes] | None = None
        self.admin_pid: int | None = None
        self.boot_id = new_boot_id()

    @property
    def stopping(self) -> bool:
        return self.stop_request.requested

    def child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["BRAIN_DATA_DIR"] = str(self.settings.data_path)  # one absolute path for all
        env["BRAIN_BOOT_ID"] = self.boot_id  # idempotency claims and actor identity of this start
        return env

    def run(self) -> int:
        """Start, say ready, watch until SIGTERM/SIGINT or a child's death, stop everything.
        The exit code: 0 after a stop request, 1 when something died, 2 for a taken port."""
        become_subreaper()
        try:
            failed = self._start(self.child_env())
            return failed if failed is not None else self._watch()
        finally:
            self.stop()

    def _start(self, env: dict[str, str]) -> int | None:
        """The actor system, then (with the web tier) gunicorn; None once all answer, else
        the exit code."""
        # -P: nothing from the working directory shadows the installed Brain (a folder named
        # `brain` there, such as a clone of it, would otherwise be imported instead).
        self.boot = subprocess.Popen([sys.executable, "-P", "-m", "brain.actors.system.boot"],
                                     env=env, stdout=subprocess.PIPE, preexec_fn=_child_setup)
        actor_port = self._wait_ready(self.boot)
        if actor_port is None:
            return self._boot_failure()
        self.admin_pid = listening_process(actor_port, descendants(os.getpid()))
        if self.admin_pid is None:
            print(f"brain {self.command}: cannot find the actor system's admin process; "
                  "stopping", file=sys.stderr)
            return 1
        if not self.with_web:
            print(f"Brain actor system ready on {self.settings.actor_bind}:{actor_port} "
                  f"(data in {self.settings.data_path})", flush=True)
            notify_service_manager(f"READY=1\nSTATUS=actor system on port {actor_port}",
                                   self.command)
            return None
        env["BRAIN_ACTOR_PORT"] = str(actor_port)  # chosen by the boot process if unset
        self.web = subprocess.Popen(
            [sys.executable, "-P", "-m", "brain.web.gunicorn_main", "-c", self.gunicorn_config,
             "brain.web.wsgi:application"], env=env, preexec_fn=_child_setup)
        if not self._wait_answering("/healthz", HTTP_READY_TIMEOUT_SECS):
            return 0 if self.stopping else 1
        host, port = self.settings.listen_host_port
        print(f"Brain serving on http://{host}:{port} (data in {self.settings.data_path})",
              flush=True)
        if not self._wait_answering("/readyz", HTTP_READY_TIMEOUT_SECS, PREPARE_TIMEOUT_SECS):
            return 0 if self.stopping else 1
        notify_service_manager(f"READY=1\nSTATUS=serving on http://{host}:{port}", self.command)
        return None

    def _watch(self) -> int:
        while not self.stopping:
            failure = self._failed_child()
            if failure is not None:
                print(f"brain {self.command}: {failure}; stopping", file=sys.stderr, flush=True)
                return 1
            time.sleep(0.2)
            reap_adopted({child.pid for child in (self.web, self.boot) if child is not None})
        return 0

    def _wait_ready(self, boot: subprocess.Popen[bytes]) -> int | None:
        """The actor port from the boot process's `ready <port>` line; None if it never came."""
        deadline = time.monotonic() + ACTOR_READY_TIMEOUT_SECS
        assert boot.stdout is not None
        while time.monotonic() < deadline and not self.stopping:
            line = boot.stdout.readline()
            if not line:
                return None
            word, _, port = line.decode(errors="replace").strip().partition(" ")
            if word == "ready" and port.isdigit():
                return int(port)
        return None

    def _boot_failure(self) -> int:
        assert self.boot is not None
        if self.stopping:
            return 0
        try:
            code = self.boot.wait(timeout=ACTOR_STOP_TIMEOUT_SECS)
        except subprocess.TimeoutExpired:
            code = None
        if code == ACTOR_PORT_REFUSED:
            return 2  # the boot process said which port and why, in one line
        print(f"brain {self.command}: the actor system did not start", file=sys.stderr)
        return 1

    def _failed_child(self) -> str | None:
        """What died, if a process this server cannot serve without has exited."""
        if self.web is not None and self.web.poll() is not None:
            return f"the web server (gunicorn) exited with code {self.web.returncode}"
        if self.boot is not None and self.boot.poll() is not None:
            return f"the actor system's boot process exited with code {self.boot.returncode}"
        if self.admin_pid is not None and not is_running(self.admin_pid):
            return f"the actor system (admin pid {self.admin_pid}) died"
        return None

    def _wait_answering(self, path: str, timeout: float, preparing_timeout: float = 0.0
                        ) -> bool:
        """Wait until the HTTP server answers `path` with 200: /healthz (it serves), then
        /readyz (requests reach the actors too). While /readyz names what the server is still
        preparing (Agentloops it compiles), that is said once and the wait may run to
        `preparing_timeout`; when it ends, `ready` is said too."""
        host, port = self.settings.listen_host_port
        started = time.monotonic()
        said_preparing = False
        while not self.stopping:
            failure = self._failed_child()
            if failure is not None:
                print(f"brain {self.command}: {failure}; stopping", file=sys.stderr,
                      flush=True)
                return False
            status, body = http_get(local_host(host), port, path)
            if status == 200:
                if said_preparing:
                    print(f"Brain ready ({time.monotonic() - started:.1f} s after serving)",
                          flush=True)
                return True
            preparing = body.get("preparing") if isinstance(body, dict) else None
            if preparing and not said_preparing:
                said_preparing = True
                print(f"Brain preparing: {'; '.join(map(str, preparing))} (/readyz answers 503 "
                      f"until done; sessions of other Agentloops are served meanwhile)",
                      flush=True)
            limit = preparing_timeout if preparing else timeout
            if time.monotonic() - started > max(timeout, limit):
                break
            time.sleep(0.1)
        if not self.stopping:
            print(f"brain serve: http://{host}:{port}{path} did not answer within "
                  f"{time.monotonic() - started:.0f} s; stopping", file=sys.stderr)
        return False

    def drain(self) -> None:
        """Stop admitting work, then wait (bounded) for admitted turns to finish."""
        start_draining(self.settings.data_path)
        deadline = time.monotonic() + self.settings.drain_secs
        while time.monotonic() < deadline:
            if self.boot is None or self.boot.poll() is not None:
                return
            if not sessions_in_flight(session_statuses(self.settings.sessions_path)):
                return
            time.sleep(0.1)
        print(f"brain {self.command}: drain deadline reached; unfinished turns will be "
              "recorded as interrupted at the next start", file=sys.stderr)

    def _admitting(self) -> bool:
        """Whether work may have been admitted: the web tier runs, or (`brain actors`, whose
        web tier runs apart) the actor system has said it is ready."""
        if self.with_web:
            return self.web is not None and self.web.poll() is None
        return self.admin_pid is not None

    def stop(self) -> None:
        if self.stopping and self._admitting():
            notify_service_manager("STOPPING=1", self.command)
            self.drain()
        doomed = descendants(os.getpid())
        if self.web is not None and self.web.poll() is None:
            self.web.send_signal(signal.SIGTERM)
            _wait(self.web, self.settings.drain_secs + 10)
        if self.boot is not None and self.boot.poll() is None:
            self.boot.send_signal(signal.SIGTERM)
            _wait(self.boot, ACTOR_STOP_TIMEOUT_SECS)
        for pid in doomed + descendants(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for child in (self.web, self.boot):
            if child is not None:
                _wait(child, 5)
        reap_adopted(set())


def http_get(host: str, port: int, path: str) -> tuple[int | None, object]:
    """GET path on host:port: the status and the JSON body (None when there is none)."""
    import json

    connection = http.client.HTTPConnection(host, port, timeout=2.0)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        raw = response.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        return response.status, body
    except (OSError, http.client.HTTPException):
        return None, None
    finally:
        connection.close()


def _wait(child: subprocess.Popen[bytes], timeout: float) -> None:
    try:
        child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait(timeout=5)


def taken_port(settings: Settings) -> str | None:
    """One line naming the HTTP or actor port that is already in use, if one is."""
    host, port = settings.listen_host_port
    if not port_is_free(host, port):
        return f"HTTP port {port} (BRAIN_LISTEN={settings.listen}) is already in use"
    if settings.actor_port is not None and not port_is_free(settings.actor_bind,
                                                            settings.actor_port):
        return (f"actor port {settings.actor_port} (BRAIN_ACTOR_PORT) is already in use on "
                f"{settings.actor_bind}")
    return None


def serve(gunicorn_config: str | None = None) -> int:
    """Run Brain until SIGTERM/SIGINT; `gunicorn_config` is an operator's gunicorn settings file."""
    stop_request = StopRequest()
    stop_request.install()
    try:
        use_default_config_file()
        settings = Settings.from_env()
        gunicorn_arg = gunicorn_config_arg(gunicorn_config)
        BrainConfig.load(settings.config)  # refuse a broken configuration before starting
        check_thespian()  # and a Thespian that Brain's patches do not fit
    except (ConfigError, SettingError, ThespianMismatch) as exc:
        # An operator's mistake, not a crash: the message names the setting or the part.
        print(f"brain serve: {exc}", file=sys.stderr)
        return 2
    taken = taken_port(settings)
    if taken is not None:
        print(f"brain serve: {taken}", file=sys.stderr)
        return 2
    prepare_data_dir(settings.data_path)
    holder = data_dir_holder(settings.data_path)
    if holder is not None:
        print(f"brain serve: {DataDirTaken(settings.data_path, holder)}", file=sys.stderr)
        return 2
    ensure_operator_token(settings)
    clear_live_sockets(settings)
    stop_draining(settings.data_path)
    return Supervisor(settings, stop_request, gunicorn_arg).run()


DEFAULT_CONFIG_FILE = Path("conf") / "brain.toml"


def use_default_config_file() -> None:
    """With BRAIN_CONFIG unset, `conf/brain.toml` of the working directory is the configuration
    when it exists (docs/configuration.md). Resolved once here and
    exported, so every process of this server reads the same file whatever its directory."""
    if not os.environ.get("BRAIN_CONFIG") and DEFAULT_CONFIG_FILE.is_file():
        os.environ["BRAIN_CONFIG"] = str(DEFAULT_CONFIG_FILE.resolve())


def clear_live_sockets(settings: Settings) -> None:
    """Sockets and follow markers left by the workers of a previous run; the new workers bind
    their own."""
    from brain.live.followers import clear_followers, live_dir

    live = live_dir(settings.data_path)
    for stale in live.glob("*.sock"):
        stale.unlink(missing_ok=True)
    clear_followers(live)
