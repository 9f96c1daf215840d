"""`brain serve`: a plain supervisor loop, in the manner of gunicorn's arbiter.

It starts the actor-system process, waits until the admin answers, starts gunicorn, and then
only watches: if either child dies, or SIGTERM/SIGINT arrives, it stops everything it started,
web first (so no request is cut off mid-turn while actors still run), then the actors, and
finally SIGKILLs any descendant that outlived its parent, so no process is left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from brain.config import BrainConfig, ConfigError
from brain.drain import start_draining, stop_draining
from brain.operator_token import ensure_operator_token
from brain.procstat import all_stats, read_stat
from brain.sessions.scan import sessions_in_flight
from brain.settings import SettingError, Settings
from brain.web.idempotency import new_boot_id

ACTOR_READY_TIMEOUT_SECS = 60.0
ACTOR_STOP_TIMEOUT_SECS = 20.0


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


def become_subreaper() -> None:
    """Orphaned descendants (Thespian's double-forked admin) re-parent to us, not to init.

    That keeps every process Brain starts visible to `descendants()` and reapable by us.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("brain serve: could not become a child subreaper", file=sys.stderr)


def descendants(root_pid: int) -> list[int]:
    """Every live descendant of root_pid, read from /proc (children before grandchildren)."""
    children: dict[int, list[int]] = {}
    for proc in all_stats():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found: list[int] = []
    frontier = [root_pid]
    while frontier:
        pid = frontier.pop(0)
        for child in children.get(pid, []):
            found.append(child)
            frontier.append(child)
    return found


class Supervisor:
    def __init__(self, settings: Settings, gunicorn_config: str = PACKAGED_GUNICORN_CONFIG) -> None:
        self.settings = settings
        self.gunicorn_config = gunicorn_config
        self.stopping = False
        self.boot: subprocess.Popen[bytes] | None = None
        self.web: subprocess.Popen[bytes] | None = None
        self.boot_id = new_boot_id()

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stopping = True

    def child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["BRAIN_DATA_DIR"] = str(self.settings.data_path)  # one absolute path for all
        env["BRAIN_BOOT_ID"] = self.boot_id  # idempotency claims of this start
        return env

    def run(self) -> int:
        become_subreaper()
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        env = self.child_env()
        try:
            self.boot = subprocess.Popen([sys.executable, "-m", "brain.actors.boot"], env=env,
                                         stdout=subprocess.PIPE,
                                         preexec_fn=_die_with_supervisor)
            if not self._wait_ready(self.boot):
                print("brain serve: the actor system did not start", file=sys.stderr)
                return 1
            self.web = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c", self.gunicorn_config,
                 "brain.web.wsgi:application"], env=env, preexec_fn=_die_with_supervisor)
            host, port = self.settings.listen_host_port
            print(f"Brain serving on http://{host}:{port} (data in {self.settings.data_path})",
                  flush=True)
            while not self.stopping:
                if self.web.poll() is not None or self.boot.poll() is not None:
                    print("brain serve: a child process exited; stopping", file=sys.stderr)
                    return 1
                time.sleep(0.2)
                _reap_adopted({self.web.pid, self.boot.pid})
            return 0
        finally:
            self.stop()

    def _wait_ready(self, boot: subprocess.Popen[bytes]) -> bool:
        deadline = time.monotonic() + ACTOR_READY_TIMEOUT_SECS
        assert boot.stdout is not None
        while time.monotonic() < deadline and not self.stopping:
            line = boot.stdout.readline()
            if not line:
                return False
            if line.strip() == b"ready":
                return True
        return False

    def drain(self) -> None:
        """Stop admitting work, then wait (bounded) for admitted turns to finish."""
        start_draining(self.settings.data_path)
        deadline = time.monotonic() + self.settings.drain_secs
        while time.monotonic() < deadline:
            if self.boot is None or self.boot.poll() is not None:
                return
            if not sessions_in_flight(self.settings.sessions_path):
                return
            time.sleep(0.1)
        print("brain serve: drain deadline reached; unfinished turns will be recorded as "
              "interrupted at the next start", file=sys.stderr)

    def stop(self) -> None:
        if self.web is not None and self.web.poll() is None and self.stopping:
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
        _reap_adopted(set())


def _reap_adopted(own_children: set[int]) -> None:
    """Reap adopted orphans that exited, by pid, leaving our Popen children to Popen."""
    me = os.getpid()
    for pid in descendants(me):
        if pid in own_children:
            continue
        try:
            proc = read_stat(pid)
        except OSError:
            continue
        if proc.state == "Z" and proc.ppid == me:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _wait(child: subprocess.Popen[bytes], timeout: float) -> None:
    try:
        child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait(timeout=5)


def serve(gunicorn_config: str | None = None) -> int:
    """Run Brain until SIGTERM/SIGINT; `gunicorn_config` is an operator's gunicorn settings file."""
    try:
        use_default_config_file()
        settings = Settings.from_env()
        gunicorn_arg = gunicorn_config_arg(gunicorn_config)
        BrainConfig.load(settings.config)  # refuse a broken configuration before starting
    except (ConfigError, SettingError) as exc:
        # An operator's mistake, not a crash: the message names the setting or the part.
        print(f"brain serve: {exc}", file=sys.stderr)
        return 2
    settings.data_path.mkdir(parents=True, exist_ok=True)
    ensure_operator_token(settings)
    clear_live_sockets(settings)
    stop_draining(settings.data_path)
    return Supervisor(settings, gunicorn_arg).run()


DEFAULT_CONFIG_FILE = Path("conf") / "brain.toml"


def use_default_config_file() -> None:
    """With BRAIN_CONFIG unset, `conf/brain.toml` of the working directory is the configuration
    when it exists (docs/configuration.md). Resolved once here and
    exported, so every process of this server reads the same file whatever its directory."""
    if not os.environ.get("BRAIN_CONFIG") and DEFAULT_CONFIG_FILE.is_file():
        os.environ["BRAIN_CONFIG"] = str(DEFAULT_CONFIG_FILE.resolve())


def clear_live_sockets(settings: Settings) -> None:
    """Sockets left by the workers of a previous run; the new workers bind their own."""
    from brain.live.publisher import live_dir

    for stale in live_dir(settings.data_path).glob("*.sock"):
        stale.unlink(missing_ok=True)
